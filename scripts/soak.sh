#!/usr/bin/env bash
# The soak (issue 16; not in CI): msgr closed loop, msgr open loop, shm and
# S3 against their embedded servers, MINUTES each at moderate load. Every
# 10 s it samples the client's and the server's RSS and open descriptors;
# a phase fails when any of them grows by more than 10% after its first
# 5 minutes (a third of the phase when it is shorter), or when its run
# does not complete.
#
#   scripts/soak.sh [--minutes N] [--out FILE.md]
#
# Writes the samples (CSV) and a Markdown report (FILE.md, or stdout);
# exits 1 when a phase fails.
set -euo pipefail

minutes=15
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes="${2:-}"; shift 2 ;;
        --out) out="${2:-}"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "soak.sh: unknown argument '$1' (--minutes N, --out FILE.md)" >&2; exit 2 ;;
    esac
done
if ! [[ "$minutes" =~ ^[1-9][0-9]*$ ]]; then
    echo "soak.sh: --minutes '$minutes': a whole number of minutes, at least 1" >&2
    exit 2
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --release --quiet -p wirebench --manifest-path "$root/Cargo.toml"
wb="$root/target/release/wirebench"
work="$(mktemp -d /tmp/wb-soak.XXXXXX)"
run_pid=""
cleanup() {
    if [ -n "$run_pid" ] && kill -0 "$run_pid" 2>/dev/null; then
        kill -TERM "$run_pid" 2>/dev/null || true
        wait "$run_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

phase_s=$((minutes * 60))
warm_s=$((phase_s / 3 < 300 ? phase_s / 3 : 300))
samples="$work/samples.csv"
echo "phase,t_s,client_rss_kib,client_fds,server_rss_kib,server_fds" > "$samples"

# name | what runs (moderate load: open loop at a fixed rate, or a small
# closed loop)
phases=(
    "msgr closed loop|--clients 2 --depth 4 --size 4KiB"
    "msgr open loop|--rate 5000 --conns-per-client 4 --size 1KiB"
    "shm|--transport shm --mode async --size 4KiB --rate 5000"
    "s3 mixed|--transport s3 --workload mixed --objects 64 --size 16KiB --conns-per-client 4 --rate 500"
)

rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo ""; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

rows=()
failed=0
for p in "${phases[@]}"; do
    name="${p%%|*}"
    args="${p#*|}"
    echo "soak: $name, $minutes min" >&2
    # shellcheck disable=SC2086
    "$wb" run --results "$work/results" --format json --warmup 0s --duration "${minutes}m" $args \
        > "$work/run.json" 2> "$work/run.err" &
    run_pid=$!
    server=""
    for _ in $(seq 300); do
        server="$(pgrep -P "$run_pid" | head -1 || true)"
        [ -n "$server" ] && break
        sleep 0.1
    done
    t0=$(date +%s)
    while kill -0 "$run_pid" 2>/dev/null; do
        t=$(($(date +%s) - t0))
        c_rss="$(rss "$run_pid")"; c_fd="$(fds "$run_pid")"
        s_rss="$(rss "${server:-0}")"; s_fd="$(fds "${server:-0}")"
        if [ -n "$c_rss" ] && [ -n "$s_rss" ] && [ "$t" -lt "$phase_s" ]; then
            echo "$name,$t,$c_rss,$c_fd,$s_rss,$s_fd" >> "$samples"
        fi
        sleep 10
    done
    status=0
    wait "$run_pid" || status=$?
    run_pid=""
    ops=$(python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["summary"]["ops_per_s"])' \
        "$work/run.json" 2>/dev/null || echo "-")
    # Growth of each figure: its largest value after the warm period over
    # its value at the end of it.
    row=$(awk -F, -v ph="$name" -v warm="$warm_s" '
        $1 == ph && $2 >= warm {
            n++
            for (i = 3; i <= 6; i++) {
                if (n == 1) base[i] = $i
                if ($i > top[i] || n == 1) top[i] = $i
            }
        }
        END {
            if (n < 2) { print "no samples after the warm period|1"; exit }
            bad = 0
            for (i = 3; i <= 6; i++) {
                g[i] = base[i] > 0 ? 100 * (top[i] - base[i]) / base[i] : 0
                if (g[i] > 10) bad = 1
            }
            printf "%.1f -> %.1f MiB (%+.1f%%) | %d -> %d (%+.1f%%) | %.1f -> %.1f MiB (%+.1f%%) | %d -> %d (%+.1f%%)|%d\n",
                base[3] / 1024, top[3] / 1024, g[3], base[4], top[4], g[4],
                base[5] / 1024, top[5] / 1024, g[5], base[6], top[6], g[6], bad
        }' "$samples")
    bad="${row##*|}"
    figures="${row%|*}"
    verdict="pass"
    if [ "$status" -ne 0 ]; then
        verdict="FAIL: the run exited $status ($(tail -1 "$work/run.err"))"
        failed=1
    elif [ "$bad" -ne 0 ]; then
        verdict="FAIL: grew by more than 10%"
        failed=1
    fi
    rows+=("| $name | $args | $ops | $figures | $verdict |")
done

cpu_model="$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
{
    echo "# Soak: $minutes minutes per phase"
    echo
    echo "\`scripts/soak.sh --minutes $minutes\` (release build, embedded servers, loopback)."
    echo "Machine: $(nproc) CPUs ($cpu_model), kernel $(uname -r). Samples every 10 s; each"
    echo "figure is given at the end of the warm period ($warm_s s) and at its largest after it;"
    echo "a phase fails when one grows by more than 10%."
    echo
    echo "| phase | load | ops/s | client RSS | client fds | server RSS | server fds | verdict |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    echo
    echo "<details><summary>samples (CSV)</summary>"
    echo
    echo '```'
    cat "$samples"
    echo '```'
    echo
    echo "</details>"
} > "$work/report.md"
if [ -n "$out" ]; then
    cp "$work/report.md" "$out"
    echo "soak: report in $out" >&2
else
    cat "$work/report.md"
fi
exit "$failed"
