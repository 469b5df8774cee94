package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/sandbox"
	"github.com/ballastk8s/ballast/test/simagent"
)

// liveCluster drives the live run's API objects.
type liveCluster struct {
	s      *sandbox.Sandbox
	o      LiveOptions
	c      client.Client // no client-side rate limit (the API server's fairness applies)
	owners []*appsv1.ReplicaSet
	// hashOf is each profile's measurementHash as ballast-control assigned it.
	hashOf map[string]string
	// notEmptied is the queue depth each pass left when its queue did not empty.
	notEmptied []float64
}

func newLiveCluster(_ context.Context, s *sandbox.Sandbox, o LiveOptions) (*liveCluster, error) {
	cfg := rest.CopyConfig(s.Kube.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: s.Kube.Scheme})
	if err != nil {
		return nil, err
	}
	return &liveCluster{s: s, o: o, c: c}, nil
}

func liveNamespace(w int) string { return fmt.Sprintf("live-%03d", w/100) }
func liveApp(w int) string       { return "app-" + strconv.Itoa(w) }

// createOwners creates one ReplicaSet per workload (owned by a Deployment of the same name,
// as the deployment controller would make it), unpaced. The pods' owner walk in the webhook
// and the enrollment controller then runs as for real Deployments.
func (l *liveCluster) createOwners(ctx context.Context) error {
	workloads := l.o.Pods / l.o.Replicas
	for ns := 0; ns < workloads; ns += 100 {
		if err := l.s.EnsureNamespace(ctx, liveNamespace(ns)); err != nil {
			return err
		}
	}
	l.owners = make([]*appsv1.ReplicaSet, workloads)
	t0 := time.Now()
	err := parallel(16, workloads, func(w int) error {
		sel := map[string]string{"app.kubernetes.io/name": liveApp(w), "app.kubernetes.io/component": "api"}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: liveApp(w) + "-5d8f", Namespace: liveNamespace(w), Labels: sel,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: liveApp(w),
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", w)), Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(l.o.Replicas)), Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: livePodSpec("")}}}
		if err := l.c.Create(ctx, rs); err != nil {
			return err
		}
		l.owners[w] = rs
		return nil
	})
	fmt.Printf("%s  created %d ReplicaSets in %s\n", now(), workloads, time.Since(t0).Round(time.Second))
	return err
}

// livePodSpec is 2 containers (c0, c1) of 100m / 128Mi (limit 256Mi), bound to node.
func livePodSpec(node string) corev1.PodSpec {
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
	var cs []corev1.Container
	for n := 0; n < simagent.Containers; n++ {
		cs = append(cs, corev1.Container{Name: simagent.ContainerName(n), Image: "registry.invalid/sim:1", Resources: res})
	}
	return corev1.PodSpec{NodeName: node, Containers: cs, TerminationGracePeriodSeconds: ptr.To(int64(0)),
		Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}}}
}

// livePod is replica k of workload w on its node; baseline pods carry no mode label.
func (l *liveCluster) livePod(w, k int, baseline bool) *corev1.Pod {
	rs := l.owners[w]
	labels := map[string]string{"app.kubernetes.io/name": liveApp(w), "app.kubernetes.io/component": "api"}
	name := fmt.Sprintf("%s-%d", rs.Name, k)
	if baseline {
		name = fmt.Sprintf("%s-base-%d", rs.Name, k)
	} else {
		labels[ballastv1.ModeLabel] = ballastv1.ModeApply
	}
	node := fmt.Sprintf("sim-node-%d", (w*l.o.Replicas+k)%l.o.Nodes+1)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rs.Namespace, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: livePodSpec(node)}
}

// churn creates every enrolled pod, replica by replica (the first replica of every workload,
// then the second, ...), and every BaselineEvery-th create a baseline pod instead, paced at
// Rate creates/s with at most 256 in flight. It returns each create's latency as the
// client sees it.
func (l *liveCluster) churn(ctx context.Context) (enrolled, baseline []time.Duration, errs int) {
	workloads := l.o.Pods / l.o.Replicas
	type job struct {
		w, k     int
		baseline bool
	}
	var jobs []job
	nb := 0
	for k := 0; k < l.o.Replicas; k++ {
		for w := 0; w < workloads; w++ {
			if l.o.BaselineEvery > 0 && len(jobs)%l.o.BaselineEvery == l.o.BaselineEvery-1 {
				jobs = append(jobs, job{w: nb % workloads, k: nb / workloads, baseline: true})
				nb++
			}
			jobs = append(jobs, job{w: w, k: k})
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	tick := time.NewTicker(time.Second / time.Duration(l.o.Rate))
	defer tick.Stop()
	var firstErr error
	for i, j := range jobs {
		select {
		case <-ctx.Done():
			return enrolled, baseline, errs + len(jobs) - i
		case <-tick.C:
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			pod := l.livePod(j.w, j.k, j.baseline)
			t0 := time.Now()
			err := l.c.Create(ctx, pod)
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs++
				if firstErr == nil {
					firstErr = err
					fmt.Printf("%s  create %s/%s: %v\n", now(), pod.Namespace, pod.Name, err)
				}
			case j.baseline:
				baseline = append(baseline, d)
			default:
				enrolled = append(enrolled, d)
			}
		}()
		if i%5000 == 4999 {
			fmt.Printf("%s  %d/%d creates sent\n", now(), i+1, len(jobs))
		}
	}
	wg.Wait()
	return enrolled, baseline, errs
}

// quantiles are p50, p99 and the maximum in ms.
func quantiles(d []time.Duration) (p50, p99, mx float64) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return ms(s[len(s)/2]), ms(s[int(0.99*float64(len(s)-1))]), ms(s[len(s)-1])
}

// waitEnrolled waits until every profile exists with its measurementHash, then returns the
// hashes of each node's enrolled pods (from their profile-ref annotations).
func (l *liveCluster) waitEnrolled(ctx context.Context, workloads int) (map[string][]string, error) {
	for {
		l.hashOf = map[string]string{}
		err := listPages(ctx, l.c, &ballastv1.WorkloadProfileList{}, func(o client.ObjectList) {
			for _, wp := range o.(*ballastv1.WorkloadProfileList).Items {
				if wp.Status.MeasurementHash != "" {
					l.hashOf[wp.Name] = wp.Status.MeasurementHash
				}
			}
		})
		if err != nil {
			return nil, err
		}
		if len(l.hashOf) >= workloads {
			break
		}
		fmt.Printf("%s  %d/%d profiles have a measurementHash\n", now(), len(l.hashOf), workloads)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
	out := map[string][]string{}
	missing := 0
	err := listPages(ctx, l.c, &corev1.PodList{}, func(o client.ObjectList) {
		for _, p := range o.(*corev1.PodList).Items {
			if p.Labels[ballastv1.ModeLabel] == "" {
				continue
			}
			h, ok := l.hashOf[p.Annotations[ballastv1.ProfileRefAnnotation]]
			if !ok {
				missing++
				continue
			}
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], h)
		}
	})
	if missing > 0 {
		return out, fmt.Errorf("%d enrolled pods name no known profile in %s", missing, ballastv1.ProfileRefAnnotation)
	}
	return out, err
}

// hashes lists every profile's measurementHash, sorted.
func (l *liveCluster) hashes() []string {
	out := make([]string, 0, len(l.hashOf))
	for _, h := range l.hashOf {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func listPages(ctx context.Context, c client.Client, l client.ObjectList, each func(client.ObjectList)) error {
	cont := ""
	for {
		if err := c.List(ctx, l, client.Limit(500), client.Continue(cont)); err != nil {
			return err
		}
		each(l)
		if cont = l.(metav1.ListInterface).GetContinue(); cont == "" {
			return nil
		}
	}
}
