#!/usr/bin/env bash
# Installs the Debian packages Ballast's tests need on a fresh Debian 12 machine:
# Valkey 8 from bookworm-backports (redis-server as the fallback the harness also accepts),
# openssl for test PKI, and the real-node tier's container runtime: containerd, runc and the
# CNI plugins (bridge, host-local, loopback), iproute2 and util-linux (unshare, mount). The backports suite is added by reusing the mirror URI of the
# machine's own Debian source, so no mirror host is written here.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then echo "install-deps: run as root" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive

bp=/etc/apt/sources.list.d/ballast-bookworm-backports.sources
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '$1=="deb" && $0 ~ /bookworm/ && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  if [ -n "$uri" ]; then
    printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" >"$bp"
  else
    echo "install-deps: no Debian apt source found to derive bookworm-backports from" >&2
  fi
fi

apt-get update -qq
apt-get install -y -qq openssl ca-certificates make >/dev/null
# The real-node tier (test/node). ldd (libc-bin) finds the libraries of the Valkey image.
apt-get install -y -qq containerd runc containernetworking-plugins iproute2 util-linux mount libc-bin >/dev/null
if ! apt-get install -y -qq -t bookworm-backports valkey-server valkey-tools >/dev/null; then
  echo "install-deps: valkey-server unavailable, installing redis-server as the fallback" >&2
  apt-get install -y -qq redis-server >/dev/null
fi
# Debian starts the packaged service; the tests start their own servers on free ports.
systemctl disable --now valkey-server redis-server >/dev/null 2>&1 || true
# Likewise containerd: the node tier runs its own, in private namespaces.
systemctl disable --now containerd >/dev/null 2>&1 || true
command -v valkey-server || command -v redis-server
command -v containerd runc unshare ip >/dev/null
test -x /usr/lib/cni/bridge

# eBPF toolchain (issue 14): `make generate` compiles bpf/memsignal.c with Debian's clang/llvm
# against libbpf-dev's headers through bpf2go; bpftool regenerates bpf/vmlinux.h. Builds and
# tests need none of it (the objects are committed); only generate/verify do.
apt-get install -y -qq --no-install-recommends clang llvm libbpf-dev bpftool >/dev/null
# QEMU cgroup v2 tier (issue 14, test/integration/qemu; skipped without these): qemu under TCG,
# a static busybox for the initramfs, and the Debian 6.12 cloud kernel into .cache/qemu.
apt-get install -y -qq --no-install-recommends qemu-system-x86 busybox-static >/dev/null
"$(dirname "$0")/qemu/fetch-kernel.sh" >/dev/null || echo "install-deps: guest kernel not fetched; the QEMU cgroup v2 tier will skip" >&2
