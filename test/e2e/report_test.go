package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

// amount is a cpu and memory amount of the JSON report, in whole units.
type amount struct {
	MilliCPU    int64 `json:"milliCPU"`
	MemoryBytes int64 `json:"memoryBytes"`
}

func (a amount) plus(b amount) amount {
	return amount{MilliCPU: a.MilliCPU + b.MilliCPU, MemoryBytes: a.MemoryBytes + b.MemoryBytes}
}

// figures is the part of one report row this test checks.
type figures struct {
	Pods        int    `json:"pods"`
	Requested   amount `json:"requested"`
	Recommended amount `json:"recommended"`
	UsedP50     amount `json:"usedP50"`
	UsedP95     amount `json:"usedP95"`
	Reclaimable amount `json:"reclaimable"`
	Shortfall   amount `json:"shortfall"`
}

func (f *figures) add(o figures) {
	f.Pods += o.Pods
	f.Requested, f.Recommended = f.Requested.plus(o.Requested), f.Recommended.plus(o.Recommended)
	f.UsedP50, f.UsedP95 = f.UsedP50.plus(o.UsedP50), f.UsedP95.plus(o.UsedP95)
	f.Reclaimable, f.Shortfall = f.Reclaimable.plus(o.Reclaimable), f.Shortfall.plus(o.Shortfall)
}

// reportJSON is `kubectl ballast report -A -o json`, the parts checked here.
type reportJSON struct {
	Profiles []struct {
		Name string `json:"name"`
		figures
	} `json:"profiles"`
	Namespaces []struct {
		Namespace string `json:"namespace"`
		figures
	} `json:"namespaces"`
	Total figures `json:"total"`
}

// expectedReport computes, independently of pkg/savings, what the report must say from the
// WorkloadProfile statuses and the pods bound to them: per live, unfinished pod on the mode
// ladder and per long-running container, the request, the profile's recommended request
// (the request itself when it recommends none), their differences either way, and the
// profile's usage p50/p95. It returns the total, the per-namespace sums and a fingerprint
// (every object's resourceVersion) that says whether anything changed between two reads.
func expectedReport(ctx context.Context, s *sandbox.Sandbox) (figures, map[string]figures, string, error) {
	wps := &ballastv1.WorkloadProfileList{}
	if err := s.Client.List(ctx, wps); err != nil {
		return figures{}, nil, "", err
	}
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods); err != nil {
		return figures{}, nil, "", err
	}
	var fp strings.Builder
	type ctr struct {
		rec            map[corev1.ResourceName]resource.Quantity
		p50, p95       amount
		measured       bool
		cpuRec, memRec bool
	}
	profiles := map[string]map[string]ctr{}
	for _, wp := range wps.Items {
		fmt.Fprintf(&fp, "wp/%s@%s ", wp.Name, wp.ResourceVersion)
		cs := map[string]ctr{}
		for _, cp := range wp.Status.Containers {
			c := ctr{rec: map[corev1.ResourceName]resource.Quantity{}}
			for res, r := range cp.Recommendations {
				if q, err := resource.ParseQuantity(r.Request); err == nil && r.Request != "" {
					c.rec[corev1.ResourceName(res)] = q
				}
			}
			for _, us := range cp.UsageStats {
				if us.Samples <= 0 {
					continue
				}
				p50, p95 := quantity(us.P50), quantity(us.P95)
				switch us.Resource {
				case "cpu":
					c.p50.MilliCPU, c.p95.MilliCPU, c.measured = p50.MilliValue(), p95.MilliValue(), true
				case "memory":
					c.p50.MemoryBytes, c.p95.MemoryBytes, c.measured = p50.Value(), p95.Value(), true
				}
			}
			cs[cp.Name] = c
		}
		profiles[wp.Name] = cs
	}
	var total figures
	byNS := map[string]figures{}
	for _, p := range pods.Items {
		fmt.Fprintf(&fp, "pod/%s/%s@%s ", p.Namespace, p.Name, p.ResourceVersion)
		cs, ok := profiles[p.Annotations[ballastv1.ProfileRefAnnotation]]
		mode := p.Labels[ballastv1.ModeLabel]
		if !ok || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed ||
			(mode != "measure" && mode != "apply" && mode != "resize") {
			continue
		}
		f := figures{Pods: 1}
		var containers []corev1.Container
		for _, c := range p.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				containers = append(containers, c)
			}
		}
		for _, c := range append(containers, p.Spec.Containers...) {
			req := amount{MilliCPU: c.Resources.Requests.Cpu().MilliValue(), MemoryBytes: c.Resources.Requests.Memory().Value()}
			rec := req
			pc := cs[c.Name]
			if q, ok := pc.rec[corev1.ResourceCPU]; ok {
				rec.MilliCPU = q.MilliValue()
			}
			if q, ok := pc.rec[corev1.ResourceMemory]; ok {
				rec.MemoryBytes = q.Value()
			}
			f.Requested, f.Recommended = f.Requested.plus(req), f.Recommended.plus(rec)
			f.Reclaimable = f.Reclaimable.plus(amount{max(0, req.MilliCPU-rec.MilliCPU), max(0, req.MemoryBytes-rec.MemoryBytes)})
			f.Shortfall = f.Shortfall.plus(amount{max(0, rec.MilliCPU-req.MilliCPU), max(0, rec.MemoryBytes-req.MemoryBytes)})
			if pc.measured {
				f.UsedP50, f.UsedP95 = f.UsedP50.plus(pc.p50), f.UsedP95.plus(pc.p95)
			}
		}
		total.add(f)
		n := byNS[p.Namespace]
		n.add(f)
		byNS[p.Namespace] = n
	}
	return total, byNS, fp.String(), nil
}

func quantity(s string) resource.Quantity {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}
	}
	return q
}

// checkReport runs `kubectl ballast report -A -o json` (in process, the binary's entry point)
// against the sandbox the scenario left running, and checks that its cluster total and
// each namespace row equal the sums computed from the profiles' statuses and their pods,
// and that the profile rows and the namespace rows each add up to the total. Agents keep
// writing, so the cluster is read before and after the report, and the comparison is
// made on a pass where nothing changed in between.
func checkReport(ctx context.Context, t *testing.T, s *sandbox.Sandbox, kubeconfig string) {
	t.Helper()
	var rep reportJSON
	var want figures
	var wantNS map[string]figures
	err := harness.Poll(ctx, 60*time.Second, "a report with no status change around it", func() error {
		total, byNS, before, err := expectedReport(ctx, s)
		if err != nil {
			return err
		}
		var out, errb bytes.Buffer
		code := ballast.Run(ctx, []string{"--kubeconfig", kubeconfig, "report", "-A", "-o", "json"},
			genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
		if code != 0 {
			return fmt.Errorf("report exit %d: %s", code, errb.String())
		}
		_, _, after, err := expectedReport(ctx, s)
		if err != nil {
			return err
		}
		if after != before {
			return fmt.Errorf("profiles or pods changed while the report ran")
		}
		rep = reportJSON{}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			return fmt.Errorf("report JSON: %w", err)
		}
		want, wantNS = total, byNS
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want.Pods == 0 || want.Reclaimable.MilliCPU == 0 {
		t.Fatalf("nothing to check: %+v", want)
	}
	if d := cmp.Diff(want, rep.Total); d != "" {
		t.Errorf("report total vs the sum over the profiles' statuses × their pods (-want +got):\n%s", d)
	}
	got := map[string]figures{}
	var byProfile, byNamespace figures
	for _, n := range rep.Namespaces {
		got[n.Namespace] = n.figures
		byNamespace.add(n.figures)
	}
	for _, p := range rep.Profiles {
		byProfile.add(p.figures)
	}
	if d := cmp.Diff(wantNS, got); d != "" {
		t.Errorf("report namespace rows vs the per-namespace sums (-want +got):\n%s", d)
	}
	if d := cmp.Diff(rep.Total, byProfile); d != "" {
		t.Errorf("total vs Σ profile rows (-want +got):\n%s", d)
	}
	if d := cmp.Diff(rep.Total, byNamespace); d != "" {
		t.Errorf("total vs Σ namespace rows (-want +got):\n%s", d)
	}
	t.Logf("report over the sandbox: %d pods in %d namespaces (%s), %d profiles; requested %dm/%dMi, recommended %dm/%dMi, reclaimable %dm/%dMi, shortfall %dm/%dMi",
		rep.Total.Pods, len(rep.Namespaces), strings.Join(slices.Sorted(maps.Keys(got)), ","), len(rep.Profiles),
		rep.Total.Requested.MilliCPU, rep.Total.Requested.MemoryBytes>>20, rep.Total.Recommended.MilliCPU, rep.Total.Recommended.MemoryBytes>>20,
		rep.Total.Reclaimable.MilliCPU, rep.Total.Reclaimable.MemoryBytes>>20, rep.Total.Shortfall.MilliCPU, rep.Total.Shortfall.MemoryBytes>>20)
}
