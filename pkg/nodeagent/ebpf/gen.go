package ebpf

// The BPF objects are generated from bpf/memsignal.c by bpf2go (the version go.mod pins as
// a tool) and committed, so building the agent needs no clang: `make generate` rebuilds
// them, `make verify` fails when they are stale.
//go:generate go tool bpf2go -tags linux -target amd64,arm64 -type oom_event -type stall_val memsignal ../../../bpf/memsignal.c -- -I../../../bpf -O2 -g -Wall -Werror
