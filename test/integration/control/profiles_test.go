package control

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/harness"
)

// TestControlPlane runs the profile and admission suites against the standalone store.
func TestControlPlane(t *testing.T) {
	e := startEnv(t, srv.Kube, srv.Valkey.URL())
	t.Run("profiles", func(t *testing.T) { profileSuite(t, e) })
	t.Run("blank cvMeanFloor", func(t *testing.T) { blankFloorSuite(t, e) })
	t.Run("misspelled source", func(t *testing.T) { misspelledSourceSuite(t, e) })
	t.Run("policy takes over profiles", func(t *testing.T) { takeOverSuite(t, e) })
	t.Run("webhook", func(t *testing.T) { webhookSuite(t, e) }) // last: it stops the control plane
}

// TestControlPlaneValkeyCluster runs the profile suite with the store on three masters.
func TestControlPlaneValkeyCluster(t *testing.T) {
	cluster, err := harness.StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	e := startEnv(t, kube, cluster.URL())
	profileSuite(t, e)
}

func profileSuite(t *testing.T, e *env) {
	ctx := context.Background()
	const app, comp = "shop", "api"
	var name, hash string

	t.Run("three namespaces feed one profile", func(t *testing.T) {
		var nss []string
		for i := 0; i < 3; i++ {
			ns := e.namespace(t, "shop")
			nss = append(nss, ns)
			mustCreate(t, e.c, pod("shop-api", ns, "measure", app, comp))
		}
		p := &corev1.Pod{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: nss[0], Name: "shop-api"}, p); err != nil {
			t.Fatal(err)
		}
		name = p.Annotations[ballastv1.ProfileRefAnnotation]
		if name != "shop--api--"+discriminatorOfDefault() {
			t.Fatalf("profile-ref = %q", name)
		}
		wp := e.profile(t, name, "profile counts three pods", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.ActivePods != 3 || wp.Status.ActiveWorkloads != 3 || wp.Status.MeasurementHash == "" {
				return fmt.Errorf("activePods=%d activeWorkloads=%d hash=%q", wp.Status.ActivePods, wp.Status.ActiveWorkloads, wp.Status.MeasurementHash)
			}
			return nil
		})
		hash = wp.Status.MeasurementHash
		if got := profileInfo(t, e, name); got != "component=api,name=shop,profile="+name {
			t.Errorf("ballast_profile_info labels = %q", got)
		}
		// Three nodes, one per namespace's pod, each write four samples 20 s apart.
		for i := 0; i < 3; i++ {
			e.writeSamples(t, hash, "app", series.ResourceCPU, []float64{240, 240, 240, 240}, 20*time.Second)
			e.writeSamples(t, hash, "app", series.ResourceMemory, repeat(192<<20, 4), 20*time.Second)
		}
		e.clock.Step(time.Second)
		e.reconcile(t, name)
		wp = e.profile(t, name, "samples of three namespaces pooled", func(wp *ballastv1.WorkloadProfile) error {
			s := stat(wp, "app", "cpu")
			if s == nil || s.Samples != 12 {
				return fmt.Errorf("cpu stats %+v, want 12 samples", s)
			}
			return nil
		})
		// Twelve samples but only a minute of history: not ready (minTimeSpan 2m).
		if wp.Status.State != ballastv1.StateAccruing || wp.Status.MeetsThreshold {
			t.Errorf("state %q meetsThreshold %v with a 1m time span, want Accruing", wp.Status.State, wp.Status.MeetsThreshold)
		}
		if got := stat(wp, "app", "cpu"); got.Mean != "240m" || got.Source != "kubernetes-metrics" {
			t.Errorf("cpu stats = %+v", got)
		}
	})

	t.Run("readiness and recommendations", func(t *testing.T) {
		e.clock.Step(2 * time.Minute)
		e.writeSamples(t, hash, "app", series.ResourceCPU, []float64{240}, time.Second)
		e.writeSamples(t, hash, "app", series.ResourceMemory, repeat(192<<20, 1), time.Second)
		e.reconcile(t, name)
		wp := e.profile(t, name, "profile becomes Sufficient", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.State != ballastv1.StateSufficient {
				return fmt.Errorf("state %q", wp.Status.State)
			}
			return nil
		})
		recs := wp.Status.Containers[0].Recommendations
		// cpu avg 240m × 1.25 = 300m; memory p75 192Mi; limit p99 192Mi × 1.2 = 241591910.4 bytes ⇒ rounded up to 231Mi (SPEC §2.4).
		if recs["cpu"].Request != "300m" || recs["memory"].Request != "192Mi" || recs["memory"].Limit != "231Mi" {
			t.Errorf("recommendations = %+v", recs)
		}
		if c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionReady); c == nil || c.Reason != ballastv1.ReasonSamplesCollected {
			t.Errorf("Ready condition = %+v", c)
		}
		if c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionSufficient); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Sufficient condition = %+v", c)
		}
		if wp.Status.Summary != "app: cpu 300m, mem 192Mi/231Mi" {
			t.Errorf("summary = %q", wp.Status.Summary)
		}
		waitEvent(t, e, "", name, "Sufficient", "recommends app: cpu 300m, mem 192Mi/231Mi")
	})

	t.Run("a new namespace is sized at its first admission", func(t *testing.T) {
		ns := e.namespace(t, "shop-new")
		p := pod("shop-api", ns, "apply", app, comp)
		if err := e.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		r := p.Spec.Containers[0].Resources
		if r.Requests.Cpu().String() != "300m" || r.Requests.Memory().String() != "192Mi" || r.Limits.Memory().String() != "231Mi" {
			t.Errorf("admitted resources = %v / %v", r.Requests, r.Limits)
		}
		if p.Annotations[ballastv1.AppliedAnnotation("cpu", "request")] != "300m" {
			t.Errorf("annotations = %v", p.Annotations)
		}
		waitEvent(t, e, ns, p.Name, "Sized", "sized at admission from WorkloadProfile "+name+": cpu request 300m, memory request 192Mi, memory limit 231Mi")
	})

	t.Run("an OOM kill raises the memory recommendation within one reconcile", func(t *testing.T) {
		if _, err := e.writer.AddOOM(ctx, hash, series.OOMEvent{Container: "app", Pod: "x/y", Node: "n1",
			At: e.clock.Now(), PeakBytes: 500 << 20, LimitBytes: 241591910}); err != nil {
			t.Fatal(err)
		}
		e.reconcile(t, name)
		e.profile(t, name, "memory recommendation bumped to max(peak×1.2, peak+100Mi) = 600Mi", func(wp *ballastv1.WorkloadProfile) error {
			if r := wp.Status.Containers[0].Recommendations["memory"]; r.Limit != "600Mi" || r.Request != "600Mi" {
				return fmt.Errorf("memory recommendation %+v", r)
			}
			return nil
		})
		waitEvent(t, e, "", name, "OOMBump", "container app: an OOM kill raised memory to request 600Mi limit 600Mi")
	})

	t.Run("history survives deleting every pod and is reused in a new namespace", func(t *testing.T) {
		deleteAppPods(t, e, app)
		e.profile(t, name, "orphaned", func(wp *ballastv1.WorkloadProfile) error {
			c := meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionOrphaned)
			if wp.Status.ActivePods != 0 || c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("activePods=%d orphaned=%+v", wp.Status.ActivePods, c)
			}
			return nil
		})
		waitEvent(t, e, "", name, "Orphaned", "history is kept")
		ns := e.namespace(t, "shop-fresh")
		p := pod("shop-api", ns, "apply", app, comp)
		if err := e.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if p.Annotations[ballastv1.ProfileRefAnnotation] != name {
			t.Fatalf("fresh pod bound to %q, want %q", p.Annotations[ballastv1.ProfileRefAnnotation], name)
		}
		if p.Spec.Containers[0].Resources.Requests.Cpu().String() != "300m" {
			t.Errorf("fresh deploy not sized from history: %v", p.Spec.Containers[0].Resources.Requests)
		}
		e.profile(t, name, "no longer orphaned, statistics intact", func(wp *ballastv1.WorkloadProfile) error {
			s := stat(wp, "app", "cpu")
			if wp.Status.ActivePods != 1 || meta.FindStatusCondition(wp.Status.Conditions, ballastv1.ConditionOrphaned) != nil || s == nil || s.Samples != 13 {
				return fmt.Errorf("activePods=%d conditions=%v stats=%+v", wp.Status.ActivePods, wp.Status.Conditions, s)
			}
			return nil
		})
	})

	t.Run("after orphanTTL the profile and its store data are gone", func(t *testing.T) {
		deleteAppPods(t, e, app)
		e.profile(t, name, "orphaned again", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.ActivePods != 0 {
				return fmt.Errorf("activePods=%d", wp.Status.ActivePods)
			}
			return nil
		})
		e.clock.Step(61 * time.Minute) // orphanTTL is 1h
		e.reconcile(t, name)
		eventually(t, 30*time.Second, "profile deleted", func() error {
			err := e.c.Get(ctx, client.ObjectKey{Name: name}, &ballastv1.WorkloadProfile{})
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			if err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
		ids, err := e.reader.Series(ctx, hash)
		if err != nil || len(ids) != 0 {
			t.Errorf("store still lists %d series (err %v) after purge", len(ids), err)
		}
	})

	t.Run("removing the mode label un-enrolls the pod and recounts its profile", func(t *testing.T) {
		ns := e.namespace(t, "unenroll")
		p := pod("leaver", ns, "measure", "leaver", "x")
		mustCreate(t, e.c, p)
		ref := p.Annotations[ballastv1.ProfileRefAnnotation]
		e.profile(t, ref, "counted", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.ActivePods != 1 {
				return fmt.Errorf("activePods=%d", wp.Status.ActivePods)
			}
			return nil
		})
		patch := client.MergeFrom(p.DeepCopy())
		delete(p.Labels, ballastv1.ModeLabel)
		if err := e.c.Patch(ctx, p, patch); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "bookkeeping annotations removed", func() error {
			got := &corev1.Pod{}
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			if _, ok := got.Annotations[ballastv1.ProfileRefAnnotation]; ok {
				return fmt.Errorf("still stamped: %v", got.Annotations)
			}
			if _, ok := got.Annotations[ballastv1.PolicyRefAnnotation]; ok {
				return fmt.Errorf("policy-ref left: %v", got.Annotations)
			}
			return nil
		})
		e.profile(t, ref, "recounted to zero", func(wp *ballastv1.WorkloadProfile) error {
			if wp.Status.ActivePods != 0 {
				return fmt.Errorf("activePods=%d", wp.Status.ActivePods)
			}
			return nil
		})
	})

	t.Run("a broken policy is reported and skipped", func(t *testing.T) {
		bad := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "aaa-broken"},
			Spec: ballastv1.ResourcePolicySpec{Priority: 100, Selector: ballastv1.PolicySelector{
				Namespaces: ballastv1.NamespaceSelector{Include: []string{"/regex-[/"}}}}}
		mustCreate(t, e.c, bad)
		eventually(t, 30*time.Second, "Valid=False", func() error {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(bad), bad); err != nil {
				return err
			}
			c := meta.FindStatusCondition(bad.Status.Conditions, ballastv1.ConditionValid)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "InvalidPattern" || c.ObservedGeneration != bad.Generation {
				return fmt.Errorf("condition %+v", c)
			}
			return nil
		})
		ns := e.namespace(t, "regex-a")
		p := pod("web", ns, "measure", "regex", "web")
		mustCreate(t, e.c, p)
		if got := p.Annotations[ballastv1.PolicyRefAnnotation]; got != "default" {
			t.Errorf("pod resolved to %q, want the next valid policy (default)", got)
		}
		if err := e.c.Delete(ctx, bad); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("kinds match the top-level owner", func(t *testing.T) {
		mustCreate(t, e.c, &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "deployments"},
			Spec: ballastv1.ResourcePolicySpec{Priority: 50, Selector: ballastv1.PolicySelector{Kinds: []string{"Deployment"}}, Metrics: fastPolicy().Metrics}})
		mustCreate(t, e.c, &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "cronjobs"},
			Spec: ballastv1.ResourcePolicySpec{Priority: 50, Selector: ballastv1.PolicySelector{Kinds: []string{"CronJob"}}, Metrics: fastPolicy().Metrics}})
		ns := e.namespace(t, "kinds")
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: types.UID("d-1"), Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}}
		mustCreate(t, e.c, rs)
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-29000", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: types.UID("c-1"), Controller: ptr.To(true)}}},
			Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}}
		mustCreate(t, e.c, job)
		// Give the caches a moment to see the owners, then admit pods owned by them.
		owned := func(name, kind, owner string, uid types.UID, apiVersion string) *corev1.Pod {
			p := pod(name, ns, "measure", "kinds-"+name, "x")
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, UID: uid, Controller: ptr.To(true)}}
			return p
		}
		cases := map[string]struct {
			pod  *corev1.Pod
			want string
		}{
			"Deployment through its ReplicaSet": {owned("web", "ReplicaSet", rs.Name, rs.UID, "apps/v1"), "deployments"},
			"CronJob through its Job":           {owned("nightly", "Job", job.Name, job.UID, "batch/v1"), "cronjobs"},
			"a bare pod matches neither":        {pod("bare", ns, "measure", "kinds-bare", "x"), "default"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				eventually(t, 30*time.Second, "policy-ref", func() error {
					p := &corev1.Pod{}
					if err := e.c.Get(ctx, client.ObjectKeyFromObject(tc.pod), p); err != nil {
						if err := e.c.Create(ctx, tc.pod.DeepCopy()); err != nil {
							return err
						}
						return fmt.Errorf("created")
					}
					if got := p.Annotations[ballastv1.PolicyRefAnnotation]; got != tc.want {
						return fmt.Errorf("policy-ref %q, want %q", got, tc.want)
					}
					return nil
				})
			})
		}
	})
}

func discriminatorOfDefault() string {
	return identity.Discriminator(ballastv1.KindClusterResourcePolicy, "", "default")
}

// profileInfo returns the sorted labels of a profile's ballast_profile_info series.
func profileInfo(t *testing.T, e *env, profile string) string {
	for _, m := range e.gather(t)["ballast_profile_info"].GetMetric() {
		var pairs []string
		found := false
		for _, l := range m.GetLabel() {
			pairs = append(pairs, l.GetName()+"="+l.GetValue())
			found = found || (l.GetName() == "profile" && l.GetValue() == profile)
		}
		if found {
			sort.Strings(pairs)
			return strings.Join(pairs, ",")
		}
	}
	return ""
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// deleteAppPods deletes every pod of an app in every namespace (pods never scheduled go at once).
func deleteAppPods(t *testing.T, e *env, app string) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := e.c.List(context.Background(), pods, client.MatchingLabels{"app.kubernetes.io/name": app}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if err := e.c.Delete(context.Background(), &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}
