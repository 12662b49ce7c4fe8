#!/usr/bin/env bash
# The messenger report's study (crimson-vs-async-messenger.md) on whatever
# machine this is, in under 8 minutes: wirebench's reactor server (one
# polling thread, Crimson's design) against its pool server (a thread per
# core, Async's), clients 1..N/2 (N: the usable CPUs), placed balanced and
# separated; then the contention study, one instance on N/2 clients against
# two on N/4 each, each instance also alone. It writes the reports and a
# summary Markdown naming the machine.
#
# usage: scripts/manycore.sh [WIREBENCH] [OUT]
#   WIREBENCH  a release binary (default target/release/wirebench)
#   OUT        where the results go (default manycore-HOST-TIME)
#
# On a machine without a network (the lent 16-core one), copy the release
# binary and this script there, and run it with the binary's path.
set -euo pipefail

BIN="${1:-target/release/wirebench}"
OUT="${2:-manycore-$(hostname)-$(date -u +%Y%m%dT%H%M%SZ)}"
BUDGET_S=420

if [ ! -x "$BIN" ]; then
  echo "manycore.sh: $BIN is not an executable (build it: cargo build --release)" >&2
  exit 2
fi
mkdir -p "$OUT"

n=$(nproc)
half=$(( n / 2 ))
[ "$half" -ge 1 ] || half=1
clients=()
c=1
while [ "$c" -lt "$half" ]; do
  clients+=("$c")
  c=$(( c * 2 ))
done
clients+=("$half")
list=$(IFS=,; echo "${clients[*]}")

# Runs: 2 servers x clients x 2 placements, then 2 servers x (1 + 2 + 2
# alone) for the contention study; each takes its duration, its warm-up and
# about a second to start and stop.
runs=$(( 2 * ${#clients[@]} * 2 + 2 * 5 ))
per=$(( BUDGET_S / runs - 2 ))
[ "$per" -le 10 ] || per=10
[ "$per" -ge 2 ] || per=2

echo "manycore: $n CPUs, clients $list, $runs runs of ${per}s, results in $OUT" >&2

cat > "$OUT/manycore.toml" <<EOF
name = "manycore"
[base]
size = "4KiB"
depth = 64
conns_per_client = 2
duration = "${per}s"
warmup = "1s"
[matrix]
arch = ["reactor", "pool"]
clients = [$list]
placement = ["balanced", "separated"]
EOF

# Two instances need an even number of clients.
pair=$(( half / 2 * 2 ))
[ "$pair" -ge 2 ] || pair=2
cat > "$OUT/contention.toml" <<EOF
name = "contention"
[base]
size = "4KiB"
depth = 64
conns_per_client = 2
duration = "${per}s"
warmup = "1s"
clients = $pair
placement = "balanced"
alone = true
[matrix]
arch = ["reactor", "pool"]
instances = [1, 2]
EOF

"$BIN" topo > "$OUT/topology.txt"
"$BIN" sweep "$OUT/manycore.toml" --results "$OUT"
"$BIN" sweep "$OUT/contention.toml" --results "$OUT"
"$BIN" report "$OUT/manycore" -o "$OUT/manycore.html"
"$BIN" report "$OUT/contention" -o "$OUT/contention.html"
"$BIN" table "$OUT/manycore" > "$OUT/manycore-table.md"

{
  echo "# The messenger study on $(hostname)"
  echo
  echo "- machine: $n usable CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "- kernel: $(uname -r)"
  echo "- wirebench: $("$BIN" --version)"
  echo "- runs: ${per} s each after a 1 s warm-up; clients $list; reactor (Crimson's design) and pool (Async's)"
  echo
  echo '```'
  cat "$OUT/topology.txt"
  echo '```'
  echo
  echo "## IOPS by server, clients and placement"
  echo
  cat "$OUT/manycore-table.md"
  echo
  echo "## Contention: one instance on $pair clients against two on $(( pair / 2 )) each"
  echo
  sed -n '/^## Instances/,/^## /p' "$OUT/contention.md" | sed '$d' | sed '1d'
} > "$OUT/summary.md"
echo "manycore: $OUT/summary.md, $OUT/manycore.html, $OUT/contention.html" >&2
