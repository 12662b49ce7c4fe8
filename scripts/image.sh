#!/usr/bin/env bash
# wirebench's container image, built with no registry and no container
# engine: the release binary on a Debian root holding only the packages it
# links (mmdebstrap), a non-root user, made an OCI image (umoci) and tagged
# VERSION-REVISION.
#
#   scripts/image.sh [--out DIR] [--load] [--binary FILE] [--tag TAG]
#
# Writes DIR/oci (an OCI layout) and DIR/wirebench-TAG.oci.tar (the same as
# one file: `kind load image-archive`, `ctr -n k8s.io images import`,
# `skopeo copy oci-archive:FILE docker://REGISTRY/wirebench:TAG`). --load
# also loads it into podman as localhost/wirebench:TAG. DIR: target/image.
# --binary: package that build of wirebench instead of building the
# release one (the tests package theirs); --tag: another tag.
# Needs mmdebstrap and umoci (apt-get install mmdebstrap umoci), run as
# root (mmdebstrap's root mode) or where unprivileged namespaces work.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/image
load=0
bin=
tag=
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --load) load=1; shift ;;
    --binary) bin="${2:?--binary needs a file}"; shift 2 ;;
    --tag) tag="${2:?--tag needs a tag}"; shift 2 ;;
    *) echo "scripts/image.sh: unknown argument '$1' (--out DIR, --load, --binary FILE, --tag TAG)" >&2; exit 2 ;;
  esac
done
for tool in mmdebstrap umoci; do
  command -v "$tool" >/dev/null || { echo "scripts/image.sh: $tool is needed (apt-get install $tool)" >&2; exit 1; }
done

start=$(date +%s)
if [ -z "$bin" ]; then
  cargo build --release --locked --quiet
  bin=target/release/wirebench
fi
[ -x "$bin" ] || { echo "scripts/image.sh: --binary $bin: not an executable file" >&2; exit 2; }
version=$("$bin" --version | awk '{print $2}')
rev=$(git rev-parse --short=12 HEAD)
# A build of uncommitted changes says so in its tag.
[ -z "$(git status --porcelain --untracked-files=no)" ] || rev="$rev-dirty"
tag="${tag:-$version-$rev}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wirebench-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

# The binary, its debug sections dropped (its symbols kept: perf still
# names its functions).
objcopy --strip-debug "$bin" "$tmp/wirebench"

# The Debian packages of the libraries it links, and nothing else: no
# shell, no package manager (TLS roots are built into the binary).
pkgs=$(for lib in $(ldd "$bin" | awk '$2 == "=>" {print $3}'); do
  dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true
done | cut -d: -f1 | sort -u | paste -sd, -)
[ -n "$pkgs" ] || { echo "scripts/image.sh: found no package for the binary's libraries" >&2; exit 1; }
. /etc/os-release
suite="${VERSION_CODENAME:-bookworm}"
echo "image: Debian $suite with $pkgs, wirebench $version ($rev)" >&2
mmdebstrap --quiet --variant=extract --include="$pkgs,base-files" "$suite" "$tmp/rootfs.tar"

# The OCI image: that root, the binary and a non-root user as one layer.
layout="$out/oci"
[ -d "$layout" ] || umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci unpack --image "$layout:$tag" "$tmp/bundle" >/dev/null
root="$tmp/bundle/rootfs"
tar -C "$root" -xf "$tmp/rootfs.tar"
rm -rf "$root/etc/apt" "$root/var/cache/apt" "$root/var/lib/apt" "$root/usr/share/doc" \
  "$root/usr/share/man" "$root/usr/share/locale" "$root/usr/share/lintian"
install -D -m 0755 "$tmp/wirebench" "$root/usr/local/bin/wirebench"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nwirebench:x:10001:10001:wirebench:/results:/usr/sbin/nologin\n' > "$root/etc/passwd"
printf 'root:x:0:\nwirebench:x:10001:\n' > "$root/etc/group"
# Names from /etc/hosts first, then DNS (a cluster's Services).
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$root/etc/nsswitch.conf"
install -d -m 0755 -o 10001 -g 10001 "$root/results"
install -d -m 1777 "$root/tmp"
umoci repack --image "$layout:$tag" "$tmp/bundle"
umoci config --image "$layout:$tag" \
  --author "wirebench scripts/image.sh" \
  --config.user 10001:10001 \
  --config.workingdir /results \
  --config.entrypoint /usr/local/bin/wirebench \
  --config.env PATH=/usr/local/bin:/usr/bin:/bin \
  --config.label "org.opencontainers.image.title=wirebench" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$rev"
umoci gc --layout "$layout"
archive="$out/wirebench-$tag.oci.tar"
tar -C "$layout" -cf "$archive" .

if [ "$load" = 1 ]; then
  id=$(podman pull --quiet "oci-archive:$archive")
  podman tag "$id" "localhost/wirebench:$tag"
  # (podman names what it pulled from an archive after the archive's tag)
  podman untag "$id" "localhost/$tag:latest" 2>/dev/null || true
  echo "loaded: localhost/wirebench:$tag (podman run --rm localhost/wirebench:$tag --version)" >&2
fi

size=$(du -sm "$archive" | cut -f1)
bin_mb=$(du -sm "$tmp/wirebench" | cut -f1)
echo "image wirebench:$tag: $archive, $size MiB (the binary $bin_mb MiB), in $(( $(date +%s) - start )) s"
echo "$tag" > "$out/tag"
