package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ballastScale mirrors test/bench's ScaleResult (read from its JSON).
type ballastScale struct {
	Nodes, Pods, Profiles, Series int
	ColdCycleS                    float64
	SteadyCycleS, SteadyCycleMaxS float64
	SteadyCycles                  int
	AgentOpsPerS, TotalOpsPerS    float64
	BytesPerSeries                float64
	RollupBytesPerSeries          float64
	WindowBytesPerSeries          float64
	ProfileKeyBytesPerSeries      float64
	StatusChangesPerCycle         int
	StatusWritesPerMin            float64
	StatusWritesPerMinEveryChange float64
	ColdValkeyCPUS                float64
	RestartCycleS                 float64
	AgentValkeyCPU                float64
	SteadyValkeyCPU               float64
	PeakRSSMiB, ValkeyRSSMiB      float64
	FlushInterval                 string
}

type ballastAdmission struct {
	Profiles float64 `json:"profiles"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	BaseP50  float64 `json:"baseline_p50_ms"`
	BaseP99  float64 `json:"baseline_p99_ms"`
}

func scaleMain(ctx context.Context, dir string, o ScaleOptions, bPath, aPath, vPath, lPath, docs string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b *ballastScale
	var a *ballastAdmission
	if bPath != "" {
		b = &ballastScale{}
		if err := readJSON(bPath, b); err != nil {
			return err
		}
	}
	if aPath != "" {
		a = &ballastAdmission{}
		if err := readJSON(aPath, a); err != nil {
			return err
		}
	}
	v := &VPAScale{}
	if vPath != "" { // a VPA side measured earlier: print it beside this Ballast side
		if err := readJSON(vPath, v); err != nil {
			return err
		}
	} else {
		_ = os.RemoveAll(dir + "/vpa-scale")
		var err error
		if v, err = runScale(ctx, dir, o); err != nil {
			return err
		}
		out, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "scale-vpa.json"), out, 0o644); err != nil {
			return err
		}
	}
	md := scaleMarkdown(b, a, v, o)
	if lPath != "" { // the live ballast-control run (make bench-scale-live)
		l := &LiveScale{}
		if err := readJSON(lPath, l); err != nil {
			return err
		}
		md += liveMarkdown(l)
	}
	fmt.Println()
	fmt.Println(md)
	if docs != "" {
		return WriteSection(docs, "bench-scale", md)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func scaleMarkdown(b *ballastScale, a *ballastAdmission, v *VPAScale, o ScaleOptions) string {
	var s strings.Builder
	fmt.Fprintf(&s, "`make bench-scale SCALE_NODES=%d SCALE_PODS=%d` — %d pods of %d replicas per workload (2 containers each), %d nodes. Measured %s.\n\n",
		o.Nodes, o.Pods, o.Pods, o.Replicas, o.Nodes, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	s.WriteString("| measure | Ballast | VPA 1.8.1 |\n|---|---:|---:|\n")
	bv := func(f func(*ballastScale) string) string {
		if b == nil {
			return "not run"
		}
		return f(b)
	}
	fmt.Fprintf(&s, "| workloads (profiles / VPA objects) | %s | %d |\n", bv(func(b *ballastScale) string { return fmt.Sprint(b.Profiles) }), v.VPAs)
	first := fmt.Sprintf("%.1f s (first recommender loop, no checkpoints)", v.FirstRecLoopS)
	if v.FirstRecLoopS == 0 {
		first = fmt.Sprintf("first recommender loop not finished within the %.0f s window (%d of %d VPAs had a recommendation)",
			v.WindowS, v.RecommendedAtEnd, v.VPAs)
	}
	fmt.Fprintf(&s, "| cold cycle | %s | %s |\n",
		bv(func(b *ballastScale) string {
			return fmt.Sprintf("%.1f s with a 2 h backlog read and compacted (Valkey CPU %.1f s); %.1f s for a restart once compacted",
				b.ColdCycleS, b.ColdValkeyCPUS, b.RestartCycleS)
		}), first)
	all := fmt.Sprintf("not within the window (%d of %d)", v.RecommendedAtEnd, v.VPAs)
	if v.AllRecommendedS >= 0 {
		all = fmt.Sprintf("%.0f s", v.AllRecommendedS)
	}
	fmt.Fprintf(&s, "| start → every workload has a recommendation | (cold cycle) | %s |\n", all)
	fmt.Fprintf(&s, "| steady cycle, median / worst | %s | recommender %.1f / %.1f s (%d loops); updater %.2f / %.2f s (%d loops) |\n",
		bv(func(b *ballastScale) string {
			return fmt.Sprintf("%.1f / %.1f s (%d cycles, agents flushing)", b.SteadyCycleS, b.SteadyCycleMaxS, b.SteadyCycles)
		}), v.RecLoopS, v.RecLoopMaxS, v.RecLoops, v.UpdLoopS, v.UpdLoopMaxS, v.UpdLoops)
	adm := "not run"
	if a != nil {
		adm = fmt.Sprintf("p50 %.2f / p99 %.2f ms (%0.f profiles)", a.P50, a.P99, a.Profiles)
	}
	fmt.Fprintf(&s, "| webhook latency at 200 AdmissionReviews/s | %s | p50 %.2f / p99 %.2f ms |\n", adm, v.WebhookP50, v.WebhookP99)
	fmt.Fprintf(&s, "| store ops/s | %s | no store (state in memory, checkpoints in the API) |\n",
		bv(func(b *ballastScale) string {
			return fmt.Sprintf("Valkey %.0f/s, %.0f %% of its core (agents alone %.0f/s, %.0f %%)",
				b.TotalOpsPerS, 100*b.SteadyValkeyCPU, b.AgentOpsPerS, 100*b.AgentValkeyCPU)
		}))
	fmt.Fprintf(&s, "| bytes per series / per container state | %s | %.0f B per checkpoint object (one per container) in etcd |\n",
		bv(func(b *ballastScale) string {
			return fmt.Sprintf("%.0f B: rollups %.0f, open windows %.0f, per-profile keys %.0f (MEMORY USAGE; %d series, 2 h history after compaction)",
				b.BytesPerSeries, b.RollupBytesPerSeries, b.WindowBytesPerSeries, b.ProfileKeyBytesPerSeries, b.Series)
		}), v.CheckpointBytes)
	fmt.Fprintf(&s, "| control-plane RSS | %s | %.0f MiB (%s) |\n",
		bv(func(b *ballastScale) string {
			return fmt.Sprintf("%.0f MiB bench process (reader + compute + simulated agents) + %.0f MiB Valkey", b.PeakRSSMiB, b.ValkeyRSSMiB)
		}), v.ControlRSSMiB, rssList(v.RSS))
	fmt.Fprintf(&s, "| API-server writes per minute | %s | %s |\n",
		bv(func(b *ballastScale) string {
			return fmt.Sprintf("%.0f profile status writes/min at the default --status-refresh-interval 1m (%.0f/min writing every material change; sampling every 10 s)",
				b.StatusWritesPerMin, b.StatusWritesPerMinEveryChange)
		}), writesList(v.WritesPerMin))
	fmt.Fprintf(&s, "\nDeploying %d Deployments + VPAs until every pod ran took %.0f s.\n", v.VPAs, v.DeployS)
	return s.String()
}

func rssList(m map[string]float64) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// writesList names the VPA-driven writes (its objects, checkpoints, pod resizes and evictions)
// and the total of all writes.
func writesList(m map[string]float64) string {
	var total float64
	var parts []string
	for k, v := range m {
		total += v
		if strings.HasPrefix(k, "verticalpodautoscaler") || strings.HasPrefix(k, "pods/") {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("%s (all writes incl. kwok and controllers: %.0f)", strings.Join(parts, ", "), total)
}
