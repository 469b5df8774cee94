#!/usr/bin/env bash
# Fetches the Debian 6.12 cloud kernel the QEMU cgroup v2 tier boots (issue 14) into
# .cache/qemu/ (ignored), from the machine's own apt sources (bookworm-backports, which
# hack/install-deps.sh adds). Needs qemu-system-x86 and busybox-static to be useful.
set -euo pipefail
KPKG=${KPKG:-linux-image-6.12.95+deb12-cloud-amd64-unsigned}
out=${1:-$(git rev-parse --show-toplevel)/.cache/qemu}
mkdir -p "$out"
[ -f "$out/vmlinuz" ] && { echo "$out/vmlinuz"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -qq "$KPKG" >/dev/null)
dpkg-deb -x "$tmp"/*.deb "$tmp/x"
cp "$tmp"/x/boot/vmlinuz-* "$out/vmlinuz"
echo "$KPKG" >"$out/vmlinuz.package"
echo "$out/vmlinuz"
