package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ballastk8s/ballast/test/sandbox"
)

// waitStep bounds a teardown.
const waitStep = 2 * time.Minute

// Schedule is when the scenario's steps happen, counted from the first deploy; the same on
// both sides so the integrals (waste, OOMs) cover the same minutes.
type Schedule struct {
	NewNamespaceAt, TeardownAt, Gap, Total time.Duration
}

// The apps: the demo's over-provisioned shop (4 replicas in each of three namespaces) and
// the OOM-ing image processor, its limit low enough (200Mi; the model climbs from 150Mi at
// 2Mi/s) that it is killed before either system has a usable recommendation.
var (
	shop    = sandbox.App{Name: "shop", Component: "web", Model: sandbox.ModelSteady, Replicas: 4, CPU: "1", Memory: "1Gi", MemLimit: "2Gi"}
	imgproc = sandbox.App{Name: "imgproc", Component: "worker", Model: sandbox.ModelOOM, Replicas: 1, CPU: "500m", Memory: "160Mi", MemLimit: "200Mi"}
	shopNS  = []string{"team-a", "team-b", "team-c"}
)

// admitted is what a pod got at its first admission.
type admitted struct {
	cpu, mem string
	sized    bool // differs from the author's values
	at       time.Duration
}

// Result is one side's measurements.
type Result struct {
	System                  string
	RecAt, CarryAt          time.Duration // -1: not within the run
	FirstRec, FinalRec      *rec
	NewNS, Redeploy         admitted
	RedeployRecAt           time.Duration // from the redeploy to a usable recommendation; -1: none
	FirstKill, LimitRaised  time.Duration // imgproc; -1: none
	LimitAfter              string
	OOMs                    int
	CPURatio, MemRatio      float64 // shop's final request ÷ p95 of its true usage
	WasteCPU, WasteMem      float64 // core·s, GiB·s (request − usage, summed over every pod)
	CPUOverReq              float64 // core·s of usage above the request
	ControlCPU, ControlPeak float64 // cpu-seconds over the run, peak RSS MiB (summed)
	AgentCPU, AgentPeak     float64
	Points                  []sandbox.Point
}

// play runs the scenario on one side.
func play(ctx context.Context, s *sandbox.Sandbox, sd side, sys string, sch Schedule, w io.Writer) (*Result, error) {
	say := func(f string, a ...any) {
		fmt.Fprintf(w, "%s  [%s] "+f+"\n", append([]any{time.Now().Format("15:04:05"), sys}, a...)...)
	}
	r := &Result{System: sys, RecAt: -1, CarryAt: -1, FirstKill: -1, LimitRaised: -1, RedeployRecAt: -1}
	var redeployed time.Duration
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recorder := s.Record(rctx, 5*time.Second)
	before := s.ProcStats()
	t0 := time.Now()
	since := func() time.Duration { return time.Since(t0).Round(time.Second) }
	for _, ns := range shopNS {
		if err := sd.enroll(ctx, ns, shop); err != nil {
			return nil, err
		}
	}
	if err := sd.enroll(ctx, shopNS[0], imgproc); err != nil {
		return nil, err
	}
	say("deployed shop ×4 into %s and imgproc into %s", strings.Join(shopNS, ", "), shopNS[0])
	newNSDone, teardownDone := false, false
	var redeployAt time.Duration = -1
	authoredLimit := resource.MustParse(imgproc.MemLimit)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for since() < sch.Total {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		el := since()
		cur, _ := sd.target(ctx, shopNS[0], shop)
		if r.RecAt < 0 && cur != nil {
			r.RecAt, r.FirstRec = el, cur
			say("first usable recommendation after %s: %s", el, cur)
		}
		if cur != nil {
			r.FinalRec = cur
		}
		if r.CarryAt < 0 && cur != nil && carried(ctx, s, cur) {
			r.CarryAt = el
			say("every running shop pod carries the recommendation after %s", el)
		}
		if t := s.Truth()[shopNS[0]+"/"+imgproc.Name]; t != nil && len(t.OOMAt) > 0 && r.FirstKill < 0 {
			r.FirstKill = t.OOMAt[0].Sub(t0).Round(time.Second)
			say("imgproc: first OOM kill at %s", r.FirstKill)
		}
		if r.LimitRaised < 0 {
			if pods, _ := s.AppPods(ctx, shopNS[0], imgproc.Name); len(pods) > 0 {
				if l := pods[0].Spec.Containers[0].Resources.Limits.Memory(); l.Cmp(authoredLimit) > 0 {
					r.LimitRaised, r.LimitAfter = el, mib(l)
					say("imgproc: running pod's memory limit raised to %s at %s", r.LimitAfter, el)
				}
			}
		}
		if !newNSDone && el >= sch.NewNamespaceAt {
			newNSDone = true
			say("brand-new namespace team-d: deploying shop (admission-only mode)")
			if err := sd.enrollAdmission(ctx, "team-d", shop); err != nil {
				return nil, err
			}
		}
		if newNSDone && r.NewNS.at == 0 {
			r.NewNS = firstAdmission(ctx, s, "team-d", el)
		}
		if !teardownDone && el >= sch.TeardownAt {
			teardownDone = true
			say("teardown of %s/shop (its manifests: Deployment, and for VPA its VPA object)", shopNS[1])
			if err := sd.teardown(ctx, shopNS[1], shop); err != nil {
				return nil, err
			}
			redeployAt = since() + sch.Gap
		}
		if redeployAt >= 0 && el >= redeployAt {
			say("redeploying %s/shop", shopNS[1])
			if err := sd.enroll(ctx, shopNS[1], shop); err != nil {
				return nil, err
			}
			redeployAt, redeployed = -2, el
		}
		if redeployAt == -2 && r.RedeployRecAt < 0 {
			if t, _ := sd.target(ctx, shopNS[1], shop); t != nil {
				r.RedeployRecAt = el - redeployed
			}
		}
		if redeployAt == -2 && r.Redeploy.at == 0 {
			r.Redeploy = firstAdmission(ctx, s, shopNS[1], el)
		}
	}
	r.finish(ctx, s, before)
	cancel()
	r.Points = recorder.Points()
	return r, nil
}

// carried reports whether every running shop pod's requests are within 10 % of the
// recommendation.
func carried(ctx context.Context, s *sandbox.Sandbox, target *rec) bool {
	n := 0
	for _, ns := range shopNS {
		pods, _ := s.AppPods(ctx, ns, shop.Name)
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning {
				return false
			}
			req := p.Spec.Containers[0].Resources.Requests
			if !near(req.Cpu(), &target.cpu) || !near(req.Memory(), &target.mem) {
				return false
			}
			n++
		}
	}
	return n > 0
}

func near(got, want *resource.Quantity) bool {
	g, w := got.AsApproximateFloat64(), want.AsApproximateFloat64()
	return w > 0 && g >= 0.9*w && g <= 1.1*w
}

// firstAdmission is the requests of the app's first pod in ns (zero until one exists).
func firstAdmission(ctx context.Context, s *sandbox.Sandbox, ns string, el time.Duration) admitted {
	pods, _ := s.AppPods(ctx, ns, shop.Name)
	if len(pods) == 0 {
		return admitted{}
	}
	req := pods[0].Spec.Containers[0].Resources.Requests
	a := admitted{cpu: req.Cpu().String(), mem: mib(req.Memory()), at: el}
	a.sized = req.Cpu().Cmp(resource.MustParse(shop.CPU)) != 0 || req.Memory().Cmp(resource.MustParse(shop.Memory)) != 0
	return a
}

// finish computes accuracy, waste and footprint at the end of the run.
func (r *Result) finish(ctx context.Context, s *sandbox.Sandbox, before map[string]sandbox.ProcStat) {
	truth := s.Truth()
	var cpu, mem []float64
	for _, ns := range shopNS {
		if t := truth[ns+"/"+shop.Name]; t != nil {
			cpu, mem = append(cpu, t.CPU...), append(mem, t.Mem...)
		}
	}
	var reqCPU, reqMem float64
	n := 0
	for _, ns := range []string{shopNS[0], shopNS[2]} {
		pods, _ := s.AppPods(ctx, ns, shop.Name)
		for _, p := range pods {
			reqCPU += float64(p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue())
			reqMem += float64(p.Spec.Containers[0].Resources.Requests.Memory().Value())
			n++
		}
	}
	if n > 0 && len(cpu) > 0 {
		r.CPURatio = reqCPU / float64(n) / sandbox.P95(cpu)
		r.MemRatio = reqMem / float64(n) / sandbox.P95(mem)
	}
	for _, t := range truth {
		r.WasteCPU += (t.CPUReqSec - t.CPUUseSec) / 1000
		r.WasteMem += (t.MemReqSec - t.MemUseSec) / (1 << 30)
		r.CPUOverReq += t.CPUOverReqSec / 1000
		r.OOMs += t.OOMs
	}
	after := s.ProcStats()
	for name, st := range after {
		d := st.CPUSeconds - before[name].CPUSeconds
		switch {
		case strings.HasPrefix(name, "ballast-node-"):
			r.AgentCPU += d
			r.AgentPeak += st.PeakMiB
		case name == "ballast-control" || name == "valkey" || strings.HasPrefix(name, "vpa-") || name == "metrics-server":
			r.ControlCPU += d
			r.ControlPeak += st.PeakMiB
		}
	}
}
