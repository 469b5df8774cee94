// Package oom detects OOM kills of sampled containers from cgroup v2 memory.events.local
// files, event-driven through inotify (the kernel notifies a modify event on the file each
// time a counter moves; nothing is polled), and says which limit caused each kill.
//
// Where the kernel counts (mm/memcontrol.c; the real-kernel fixtures under
// pkg/nodeagent/cgroup/testdata show both cases):
//
//   - "oom" (and "max") are counted in the cgroup whose memory limit was hit;
//   - "oom_kill" is counted in the cgroup the killed process lives in.
//
// memory.events.local holds the cgroup's own counts; memory.events adds its descendants'.
// So a kill always shows as an oom_kill increment in the victim container's
// memory.events.local, and the cause is told by whose local "oom" moved:
//
//   - the container's own (scenario1: container memory.max=64M) ⇒ KindContainer;
//   - the pod cgroup's (scenario3: pod memory.max=48M, container unlimited; the pod's
//     memory.events.local has oom 1 and oom_kill 0, the container's has oom 0, oom_kill 1)
//     ⇒ KindPod;
//   - neither (a limit above the pod — kubepods, i.e. node allocatable — or a system-wide
//     OOM, which counts no "oom" in any cgroup) ⇒ KindNode.
//
// Note that "pod memory.events oom_kill rose while the container's memory.events.local
// oom_kill did not" never identifies a pod-limit kill: the kernel charges the kill to the
// victim's own cgroup whichever limit was hit.
//
// The pure bookkeeping (tracker.go) is separate from the inotify shell (watcher_linux.go).
// The watcher knows no cgroup file by name: it watches and reads memory.events.local
// through Files (the cgroup package's rooted *cgroup.Reader), with directories relative to
// the cgroup root, and reports its read failures to Options.OnError (the agent counts them
// as source errors of the "oom" source).
package oom
