// Package kubelet is ballast-node's Summary API source: a client for the local kubelet's
// GET /stats/summary (HTTPS, service-account bearer token, serving certificate verified
// unless explicitly disabled) and the pure decoding of its answer into the readings
// Ballast records (SPEC §4.1):
//
//   - per container ephemeral storage = rootfs.usedBytes + logs.usedBytes, exactly, never
//     a split of pod totals;
//   - per pod the sum of usedBytes of its disk-backed emptyDir volumes (names supplied by
//     the caller from the pod spec);
//   - cpu (usageNanoCores → millicores) and memory (workingSetBytes) as fallbacks for when
//     cgroup files cannot be read.
//
// A missing field skips that one reading and reports it; nothing is guessed. The kubelet
// refreshes these stats every 10–15 s, so polling faster gains nothing.
package kubelet
