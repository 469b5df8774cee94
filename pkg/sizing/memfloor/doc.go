// Package memfloor reads the memory settings a container's runtime takes from its
// environment and arguments (the JVM's -Xmx and MaxRAMPercentage, Go's GOMEMLIMIT, node's
// --max-old-space-size) and turns them into a memory floor: the smallest memory request
// or limit Ballast may write without starving a heap the container was told it may use.
//
// Floors (bytes, margin m from the policy's runtime.margin, 5 % by default):
//   - jvm, -Xmx / -XX:MaxHeapSize: (heap + NonHeapJVM) × (1 + m);
//   - jvm, -XX:MaxRAMPercentage=p: the heap the running JVM sized from the container's
//     current memory limit (limit × p / 100), same formula, capped at the current limit —
//     the heap follows the limit, so a floor above it would raise the limit, which raises
//     the heap, which raises the floor: it never raises, it only stops shrinks below the
//     running heap;
//   - go, GOMEMLIMIT: max(limit × (1 + m), limit + 8Mi); "off" sets no floor;
//   - node, --max-old-space-size (MiB): (old space + NonHeapNode) × (1 + m);
//   - python and generic: no floor (CPython has no heap cap to read).
//
// An environment variable set from valueFrom is unknown at admission: no floor, and the
// Floor says so. The package is pure: no I/O, no clock.
package memfloor
