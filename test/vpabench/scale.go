package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/test/sandbox"
)

// ScaleOptions size the scale run.
type ScaleOptions struct {
	Nodes, Pods, Replicas int
	Window                time.Duration // how long the VPA loops are watched after they start
}

// VPAScale is VPA's side of the scale comparison.
type VPAScale struct {
	Nodes, Pods, VPAs                 int
	DeployS                           float64 // creating the workloads until every pod ran
	FirstRecLoopS                     float64 // the recommender's first loop (cold: no checkpoints)
	RecLoopS, RecLoopMaxS             float64 // median and worst later loop
	RecLoops                          int
	AllRecommendedS                   float64 // recommender start → every VPA has a recommendation (-1: not in the window)
	RecommendedAtEnd                  int     // VPAs with a recommendation when the window closed
	WindowS                           float64
	UpdLoopS, UpdLoopMaxS             float64
	UpdLoops                          int
	WebhookP50, WebhookP99            float64 // ms, AdmissionReviews posted at 200/s
	WritesPerMin                      map[string]float64
	CheckpointBytes                   float64 // mean JSON size of a VerticalPodAutoscalerCheckpoint (one per container)
	RSS                               map[string]float64
	RecommenderPeakMiB, ControlRSSMiB float64
}

// vpaScaleFlags are VPA's defaults (1 min loops, API client QPS 50 / burst 100):
// the scale run is about what users get out of the box.
var vpaScaleFlags = sandbox.VPAOptions{Deferred: true, Updater: []string{"--min-replicas=1"}}

func runScale(ctx context.Context, dir string, o ScaleOptions) (*VPAScale, error) {
	r := &VPAScale{Nodes: o.Nodes, Pods: o.Pods, AllRecommendedS: -1, WritesPerMin: map[string]float64{}, RSS: map[string]float64{}}
	s, err := sandbox.Start(ctx, sandbox.Options{Dir: filepath.Join(dir, "vpa-scale"), Nodes: o.Nodes, System: sandbox.SystemVPA,
		Light: true, Tick: 10 * time.Second, Progress: os.Stdout, VPA: vpaScaleFlags, Readiness: sandbox.DemoReadiness,
		ControllerQPS: 200})
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	workloads := o.Pods / o.Replicas
	r.VPAs = workloads
	t0 := time.Now()
	apps := make([]string, workloads)
	nsOf := func(i int) string { return fmt.Sprintf("scale-%03d", i/100) }
	err = parallel(16, workloads, func(i int) error {
		apps[i] = fmt.Sprintf("app-%d", i)
		a := sandbox.App{Name: apps[i], Component: "api", Model: sandbox.ModelSteady, Replicas: int32(o.Replicas),
			CPU: "100m", Memory: "128Mi", MemLimit: "256Mi", Sidecars: 1} // 20 pods fit a node of 8 cores / 16Gi
		if err := s.Deploy(ctx, nsOf(i), a, ""); err != nil {
			return err
		}
		return s.CreateVPA(ctx, nsOf(i), a.Name, sandbox.VPAModeInPlaceOrRecreate)
	})
	if err != nil {
		return nil, err
	}
	fmt.Printf("%s  created %d Deployments and VPAs in %s; waiting for %d pods\n", now(), workloads, time.Since(t0).Round(time.Second), o.Pods)
	for {
		n, err := available(ctx, s.Client)
		if err != nil {
			return nil, err
		}
		if n >= o.Pods {
			break
		}
		fmt.Printf("%s  %d/%d pods available\n", now(), n, o.Pods)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
	r.DeployS = time.Since(t0).Seconds()
	time.Sleep(45 * time.Second) // metrics-server has scraped every node at least twice
	before := s.ProcStats()
	_ = before
	if err := s.StartVPALoops(); err != nil {
		return nil, err
	}
	start := time.Now()
	w0, _ := apiWrites(ctx, s)
	var recLoops, updLoops []float64
	var rs, us hist
	lastCount := time.Now()
	for time.Since(start) < o.Window {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
		if d, ok := rs.next(scrape(s.VPAInfo.Metrics["vpa-recommender"], "vpa_recommender_execution_latency_seconds", "total")); ok {
			recLoops = append(recLoops, d)
			fmt.Printf("%s  recommender loop %d: %.1fs\n", now(), len(recLoops), d)
		}
		if d, ok := us.next(scrape(s.VPAInfo.Metrics["vpa-updater"], "vpa_updater_execution_latency_seconds", "total")); ok {
			updLoops = append(updLoops, d)
			fmt.Printf("%s  updater loop %d: %.1fs\n", now(), len(updLoops), d)
		}
		if r.AllRecommendedS < 0 && time.Since(lastCount) > 20*time.Second {
			lastCount = time.Now()
			if n, _ := recommended(ctx, s.Client); n >= workloads {
				r.AllRecommendedS = time.Since(start).Seconds()
			} else {
				fmt.Printf("%s  %d/%d VPAs have a recommendation\n", now(), n, workloads)
			}
		}
	}
	r.RecommendedAtEnd, _ = recommended(ctx, s.Client)
	r.WindowS = o.Window.Seconds()
	w1, _ := apiWrites(ctx, s)
	mins := time.Since(start).Minutes()
	for k, v := range w1 {
		if d := v - w0[k]; d > 0 {
			r.WritesPerMin[k] = d / mins
		}
	}
	if len(recLoops) > 0 {
		r.FirstRecLoopS = recLoops[0]
		r.RecLoopS, r.RecLoopMaxS, r.RecLoops = medMax(recLoops[1:])
	}
	r.UpdLoopS, r.UpdLoopMaxS, r.UpdLoops = medMax(updLoops)
	r.CheckpointBytes = checkpointBytes(ctx, s.Client)
	if r.WebhookP50, r.WebhookP99, err = vpaWebhookLatency(ctx, s, nsOf, apps); err != nil {
		fmt.Println("webhook latency:", err)
	}
	for name, st := range s.ProcStats() {
		if strings.HasPrefix(name, "vpa-") || name == "metrics-server" {
			r.RSS[name] = st.PeakMiB
			r.ControlRSSMiB += st.PeakMiB
		}
	}
	r.RecommenderPeakMiB = r.RSS["vpa-recommender"]
	return r, nil
}

func now() string { return time.Now().Format("15:04:05") }

func parallel(workers, n int, f func(i int) error) error {
	work := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// available sums the Deployments' available replicas, a page at a time.
func available(ctx context.Context, c client.Client) (int, error) {
	n, cont := 0, ""
	for {
		l := &appsv1.DeploymentList{}
		if err := c.List(ctx, l, client.Limit(500), client.Continue(cont)); err != nil {
			return 0, err
		}
		for _, d := range l.Items {
			n += int(d.Status.AvailableReplicas)
		}
		if cont = l.Continue; cont == "" {
			return n, nil
		}
	}
}

func listAll(ctx context.Context, c client.Client, kind string, each func(u *unstructured.Unstructured)) error {
	cont := ""
	for {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(schema.GroupVersionKind{Group: "autoscaling.k8s.io", Version: "v1", Kind: kind + "List"})
		if err := c.List(ctx, l, client.Limit(500), client.Continue(cont)); err != nil {
			return err
		}
		for i := range l.Items {
			each(&l.Items[i])
		}
		if cont = l.GetContinue(); cont == "" {
			return nil
		}
	}
}

// recommended counts VPAs with a recommendation in their status.
func recommended(ctx context.Context, c client.Client) (int, error) {
	n := 0
	err := listAll(ctx, c, "VerticalPodAutoscaler", func(u *unstructured.Unstructured) {
		if recs, _, _ := unstructured.NestedSlice(u.Object, "status", "recommendation", "containerRecommendations"); len(recs) > 0 {
			n++
		}
	})
	return n, err
}

func checkpointBytes(ctx context.Context, c client.Client) float64 {
	var total, n float64
	_ = listAll(ctx, c, "VerticalPodAutoscalerCheckpoint", func(u *unstructured.Unstructured) {
		b, _ := u.MarshalJSON()
		total += float64(len(b))
		n++
	})
	if n == 0 {
		return 0
	}
	return total / n
}

// hist follows a Prometheus histogram's _sum and _count: each new single observation is a loop.
type hist struct{ sum, count float64 }

func (h *hist) next(sum, count float64, ok bool) (float64, bool) {
	if !ok || count <= h.count {
		return 0, false
	}
	d := (sum - h.sum) / (count - h.count)
	h.sum, h.count = sum, count
	return d, true
}

// scrape reads name_sum and name_count{step="<step>"} from a component's /metrics.
func scrape(addr, name, step string) (sum, count float64, ok bool) {
	body, err := httpGet("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, false
	}
	sel := `{step="` + step + `"}`
	for _, line := range strings.Split(body, "\n") {
		if v, found := strings.CutPrefix(line, name+"_sum"+sel+" "); found {
			sum, _ = strconv.ParseFloat(v, 64)
		}
		if v, found := strings.CutPrefix(line, name+"_count"+sel+" "); found {
			count, _ = strconv.ParseFloat(v, 64)
			ok = true
		}
	}
	return sum, count, ok
}

var requestTotal = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)
var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// apiWrites reads the API server's write counters (POST, PUT, PATCH, DELETE, APPLY) by
// resource[/subresource].
func apiWrites(ctx context.Context, s *sandbox.Sandbox) (map[string]float64, error) {
	out, err := s.Kube.Kubectl(ctx, "get", "--raw", "/metrics")
	if err != nil {
		return nil, err
	}
	return parseWrites(out), nil
}

// parseWrites sums apiserver_request_total's write verbs by resource[/subresource].
func parseWrites(out string) map[string]float64 {
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		g := requestTotal.FindStringSubmatch(sc.Text())
		if g == nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range labelRE.FindAllStringSubmatch(g[1], -1) {
			l[kv[1]] = kv[2]
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		k := l["resource"]
		if l["subresource"] != "" {
			k += "/" + l["subresource"]
		}
		v, _ := strconv.ParseFloat(g[2], 64)
		m[k] += v
	}
	return m
}

func medMax(xs []float64) (med, mx float64, n int) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1], len(s)
}
