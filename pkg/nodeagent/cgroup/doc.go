// Package cgroup is ballast-node's primary signal source: it finds a container's cgroup
// directory from the pod UID, QoS class and container ID, reads the cgroup files, and turns
// them into the signals Ballast records (SPEC §4.1): cpu usage rate in millicores, memory
// working set in bytes, the per-interval memory peak, OOM-kill counters and PSI.
//
// The package is split the way every node-agent source is:
//
//   - layout.go: pure path construction for both cgroup drivers (systemd, cgroupfs), both
//     cgroup versions and all three QoS classes;
//   - parse*.go: pure parsers, one per file format, fuzzed with seeds from real-kernel fixtures;
//   - signals.go: the pure signal math (working set, cpu rate with counter-reset rejection);
//   - reader.go, peak.go, collector.go, dir*.go: the I/O shell. Every path is resolved
//     inside a root directory opened with os.OpenRoot (a test points it at a fixture tree;
//     production at /sys/fs/cgroup), so no name can escape it. The Collector keeps each
//     container's directories open (opened through that root) and reads a file by its name
//     in them, into one reused buffer; the parsers it runs allocate nothing on what the
//     kernel writes;
//   - memstate.go: the lifetime peak and limit an OOM report carries, read through the root.
//
// No other package reads a cgroup file by name (pkg/nodeagent/oom watches and reads
// memory.events.local through this package too).
//
// cgroup v2 files used: cpu.stat, memory.current, memory.stat, memory.max, memory.peak,
// memory.events, cpu.pressure, memory.pressure. cgroup v1 equivalents: cpuacct.usage,
// memory.usage_in_bytes, memory.stat (total_inactive_file), memory.limit_in_bytes,
// memory.max_usage_in_bytes, memory.oom_control.
package cgroup
