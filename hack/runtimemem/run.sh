#!/usr/bin/env bash
# Measures the JVM's memory above its heap: runs Fill (retains half of -Xmx in byte arrays,
# every page touched) under several heap sizes and collectors and prints, per run, the
# resident set (VmRSS), its high-water mark (VmHWM) and RSS minus the heap actually
# committed. Needs a JDK (java, javac) on PATH. Usage: hack/runtimemem/run.sh [java]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
java=${1:-java}
javac_bin=$(dirname "$(readlink -f "$(command -v "$java")")")/javac
[ -x "$javac_bin" ] || javac_bin=javac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$javac_bin" -d "$work" "$here/Fill.java"
version=$("$java" -version 2>&1 | head -1)
echo "# $version, $(uname -r), $(nproc) cpus"
printf '%-8s %-10s %-10s %-10s %-10s %-12s\n' "Xmx" "gc" "heap_held" "VmRSS" "VmHWM" "RSS-heap"
mib() { awk -v k="$1" 'BEGIN { printf "%.1fMi", k / 1024 }'; }
for gc in G1 Serial; do
	for xmx in 64 128 256 512 1024; do
		out="$work/out"
		"$java" -XX:+Use${gc}GC -Xms${xmx}m -Xmx${xmx}m -XX:+AlwaysPreTouch -cp "$work" Fill 0.5 >"$out" 2>&1 &
		pid=$!
		for _ in $(seq 1 300); do grep -q READY "$out" 2>/dev/null && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		grep -q READY "$out" || { echo "run Xmx=${xmx}m $gc did not become ready: $(cat "$out")" >&2; exit 1; }
		sleep 1
		rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
		hwm=$(awk '/^VmHWM/ {print $2}' /proc/$pid/status)
		kill "$pid"; wait "$pid" 2>/dev/null || true
		held=$(sed -n 's/.*held=\([0-9]*\).*/\1/p' "$out")
		# -Xms = -Xmx with AlwaysPreTouch: the whole heap is committed and resident, so
		# RSS − Xmx is what lives outside the heap.
		printf '%-8s %-10s %-10s %-10s %-10s %-12s\n' "${xmx}m" "$gc" "$(mib $((held / 1024)))" "$(mib "$rss")" "$(mib "$hwm")" "$(mib $((rss - xmx * 1024)))"
	done
done
