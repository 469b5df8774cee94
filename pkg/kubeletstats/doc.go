// Package kubeletstats decodes the kubelet Summary API (/stats/summary) into the readings
// Ballast records (SPEC §4.1). It is pure (no I/O, no clock) and is the one decoder both
// binaries use: the node agent's kubelet source (pkg/nodeagent/kubelet) and the control
// plane's metrics fallback (pkg/control/fallback), so they cannot disagree:
//
//   - per container ephemeral storage = rootfs.usedBytes + logs.usedBytes, exactly, never
//     a split of pod totals;
//   - per pod the sum of usedBytes of its disk-backed emptyDir volumes (DiskEmptyDirs:
//     medium "" only, as the kubelet accounts ephemeral storage; never Memory or any
//     HugePages medium), produced only when every such volume has a value — never a
//     partial sum;
//   - cpu (usageNanoCores → millicores) and memory (workingSetBytes) as fallbacks for when
//     cgroup files cannot be read.
//
// A missing field skips that one reading and reports it; nothing is guessed. A pod or
// container listed twice keeps its first entry.
package kubeletstats
