// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
//go:build ignore

// ballast-node's optional eBPF memory signal (docs/node-agent.md, "eBPF"):
//
//   - OOM kills: one ring-buffer record per victim (pid, comm, cgroup ids, RSS pages, the
//     memcg whose limit was hit), from tp_btf/mark_victim or, where BTF-enabled tracepoints
//     cannot load, the classic tracepoint oom/mark_victim.
//   - memcg limit-reclaim stalls: the time tasks spend between
//     mm_vmscan_memcg_reclaim_begin and _end (direct reclaim of a task that hit its
//     memcg's limit), summed per memory cgroup in an LRU hash the agent reads each cycle.
//
// Nothing here runs on the charge or page-fault paths. CO-RE: every kernel struct is read
// through BPF_CORE_READ against vmlinux.h, relocated at load time against the running
// kernel's BTF.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TASK_COMM_LEN 16
#define PF_KTHREAD 0x00200000
// How many memcg levels above the victim are searched for the one at its limit.
#define MAX_MEMCG_DEPTH 8
// A memcg is taken as "at its limit" when its usage is within this many pages of max
// (the charge that failed was at most a batch of 64 pages, MEMCG_CHARGE_BATCH).
#define LIMIT_SLACK_PAGES 64

// Where an OOM record came from (oom_event.hook).
#define HOOK_TP_BTF 1
#define HOOK_TRACEPOINT 2

struct oom_event {
	__u64 ts_ns;         // bpf_ktime_get_ns at the kill (CLOCK_MONOTONIC)
	__u64 cgroup_id;     // victim's cgroup on the default (v2) hierarchy
	__u64 memcg_id;      // victim's memory-controller cgroup (v1: the memory hierarchy's)
	__u64 oom_memcg_id;  // the memcg found at its limit (0: none found, a node OOM)
	__u64 anon_pages;    // victim RSS at the kill, in pages (rss_kb says whether kB)
	__u64 file_pages;
	__u64 shmem_pages;
	__u32 pid;           // victim thread-group id
	__u32 trigger_pid;   // the task whose allocation triggered the OOM
	__u8 comm[TASK_COMM_LEN];
	__u8 hook;           // HOOK_*
	__u8 rss_kb;         // 1: the RSS fields are kB (classic tracepoint), not pages
	__u8 cgroup_from_trigger; // 1: the cgroup ids are the trigger's, not the victim's
	__u8 pad[5];
};

struct stall_val {
	__u64 count;         // reclaim passes ended
	__u64 total_ns;      // summed begin→end time
	__u64 max_ns;        // longest single pass
	__u64 reclaimed;     // pages reclaimed, summed
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} oom_events SEC(".maps");

// Reclaim-begin time per thread.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} reclaim_start SEC(".maps");

// Stall per memory cgroup id; LRU, so removed cgroups age out.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct stall_val);
} reclaim_stall SEC(".maps");

// Records that found the ring buffer full.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} oom_lost SEC(".maps");

// Force the record types into BTF for bpf2go -type.
const struct oom_event *unused_oom_event __attribute__((unused));
const struct stall_val *unused_stall_val __attribute__((unused));

static __always_inline struct mem_cgroup *task_memcg(struct task_struct *t)
{
	int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	struct cgroup_subsys_state *css = BPF_CORE_READ(t, cgroups, subsys[id]);
	return (struct mem_cgroup *)css;
}

static __always_inline __u64 memcg_cgroup_id(struct mem_cgroup *m)
{
	if (!m)
		return 0;
	return BPF_CORE_READ(m, css.cgroup, kn, id);
}

// The nearest memcg at or above the victim's whose usage is at its limit: the limit that
// was hit (container, pod or higher). None: a node (global) OOM.
static __always_inline __u64 limit_memcg_id(struct mem_cgroup *m)
{
	for (int i = 0; i < MAX_MEMCG_DEPTH && m; i++) {
		__u64 usage = BPF_CORE_READ(m, memory.usage.counter);
		__u64 max = BPF_CORE_READ(m, memory.max);
		struct cgroup_subsys_state *parent = BPF_CORE_READ(m, css.parent);
		if (!parent)
			return 0; // the root memcg has no limit
		if (usage + LIMIT_SLACK_PAGES >= max)
			return memcg_cgroup_id(m);
		m = (struct mem_cgroup *)parent;
	}
	return 0;
}

static __always_inline struct oom_event *reserve_event(void)
{
	struct oom_event *e = bpf_ringbuf_reserve(&oom_events, sizeof(*e), 0);
	if (!e) {
		__u32 k = 0;
		__u64 *lost = bpf_map_lookup_elem(&oom_lost, &k);
		if (lost)
			__sync_fetch_and_add(lost, 1);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->trigger_pid = bpf_get_current_pid_tgid() >> 32;
	return e;
}

static __always_inline void fill_cgroups(struct oom_event *e, struct task_struct *t)
{
	struct mem_cgroup *m = task_memcg(t);
	e->cgroup_id = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
	e->memcg_id = memcg_cgroup_id(m);
	e->oom_memcg_id = limit_memcg_id(m);
}

SEC("tp_btf/mark_victim")
int BPF_PROG(btf_mark_victim, struct task_struct *task, uid_t uid)
{
	struct oom_event *e = reserve_event();
	if (!e)
		return 0;
	e->hook = HOOK_TP_BTF;
	e->pid = BPF_CORE_READ(task, tgid);
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	fill_cgroups(e, task);
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	if (mm) {
		e->file_pages = BPF_CORE_READ(mm, rss_stat[MM_FILEPAGES].count);
		e->anon_pages = BPF_CORE_READ(mm, rss_stat[MM_ANONPAGES].count);
		e->shmem_pages = BPF_CORE_READ(mm, rss_stat[MM_SHMEMPAGES].count);
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

// Fallback: the classic tracepoint gives the victim's pid, comm and RSS (kB) but no task,
// so the cgroup ids are the triggering task's (in a memcg OOM it is charged to the memcg
// whose limit was hit; usually the victim's own container).
SEC("tracepoint/oom/mark_victim")
int tp_mark_victim(struct trace_event_raw_mark_victim *ctx)
{
	struct oom_event *e = reserve_event();
	if (!e)
		return 0;
	e->hook = HOOK_TRACEPOINT;
	e->rss_kb = 1;
	e->cgroup_from_trigger = 1;
	e->pid = BPF_CORE_READ(ctx, pid);
	if (bpf_core_field_exists(ctx->__data_loc_comm)) {
		__u32 loc = BPF_CORE_READ(ctx, __data_loc_comm);
		bpf_probe_read_kernel_str(&e->comm, sizeof(e->comm), (void *)ctx + (loc & 0xffff));
	}
	if (bpf_core_field_exists(ctx->anon_rss)) {
		e->anon_pages = BPF_CORE_READ(ctx, anon_rss);
		e->file_pages = BPF_CORE_READ(ctx, file_rss);
		e->shmem_pages = BPF_CORE_READ(ctx, shmem_rss);
	}
	fill_cgroups(e, (struct task_struct *)bpf_get_current_task());
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int reclaim_begin(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	if (BPF_CORE_READ(t, flags) & PF_KTHREAD)
		return 0; // only tasks stalled in their own (direct) reclaim
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&reclaim_start, &tid, &now, BPF_ANY);
	return 0;
}

static __always_inline int reclaim_end(__u64 nr_reclaimed)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *start = bpf_map_lookup_elem(&reclaim_start, &tid);
	if (!start)
		return 0;
	__u64 d = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&reclaim_start, &tid);

	__u64 cg = memcg_cgroup_id(task_memcg((struct task_struct *)bpf_get_current_task()));
	struct stall_val *v = bpf_map_lookup_elem(&reclaim_stall, &cg);
	if (!v) {
		struct stall_val init = {};
		bpf_map_update_elem(&reclaim_stall, &cg, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&reclaim_stall, &cg);
		if (!v)
			return 0;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, d);
	__sync_fetch_and_add(&v->reclaimed, nr_reclaimed);
	if (d > v->max_ns)
		v->max_ns = d; // racy max: a concurrent larger value may be overwritten, rarely
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(btf_reclaim_begin, int order, gfp_t gfp_flags)
{
	return reclaim_begin();
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(btf_reclaim_end, unsigned long nr_reclaimed)
{
	return reclaim_end(nr_reclaimed);
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_begin")
int tp_reclaim_begin(void *ctx)
{
	return reclaim_begin();
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_end")
int tp_reclaim_end(struct trace_event_raw_mm_vmscan_direct_reclaim_end_template *ctx)
{
	return reclaim_end(BPF_CORE_READ(ctx, nr_reclaimed));
}
