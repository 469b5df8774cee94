package control

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

// setDefaultPolicy replaces the default ClusterResourcePolicy's spec.
func (e *env) setDefaultPolicy(t *testing.T, spec ballastv1.ResourcePolicySpec) {
	t.Helper()
	crp := &ballastv1.ClusterResourcePolicy{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: "default"}, crp); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(crp.DeepCopy())
	crp.Spec = spec
	if err := e.c.Patch(context.Background(), crp, patch); err != nil {
		t.Fatal(err)
	}
}

func envVar(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func memReq(p *corev1.Pod) string { return p.Spec.Containers[0].Resources.Requests.Memory().String() }
func memLim(p *corev1.Pod) string { return p.Spec.Containers[0].Resources.Limits.Memory().String() }

// TestRuntimeAndPodLevelAdmission drives the webhook through the real API server (over
// TLS) with a policy of runtime auto and podLevel size, then keep: each pod is created
// through the API server and the stored object is checked.
func TestRuntimeAndPodLevelAdmission(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Stop()
	e := startEnv(t, kube, srv.Valkey.URL())
	ctx := context.Background()
	spec := fastPolicy()
	spec.Runtime = ballastv1.RuntimeSpec{Type: "auto"}
	spec.PodLevel = "size"
	e.setDefaultPolicy(t, spec)
	// Recommendations: cpu request 300m, memory request 192Mi, memory limit ≈ 230Mi.
	e.sufficientProfile(t, "rt", 240, 192<<20)
	ns := e.namespace(t, "rt")

	// create makes a fresh pod of the rt profile (names differ per attempt: the policy
	// change reaches the webhook's cache asynchronously).
	i := 0
	create := func(edit func(p *corev1.Pod)) (*corev1.Pod, error) {
		i++
		p := pod(fmt.Sprintf("rt-%d", i), ns, "apply", "prop", "rt")
		edit(p)
		return p, e.c.Create(ctx, p)
	}

	t.Run("jvm -Xmx in JAVA_TOOL_OPTIONS floors memory at heap + 48Mi + 5%", func(t *testing.T) {
		eventually(t, 30*time.Second, "a jvm pod floored at 588Mi", func() error {
			p, err := create(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{envVar("JAVA_TOOL_OPTIONS", "-XX:+UseG1GC -Xmx512m")}
			})
			if err != nil {
				return err
			}
			if memReq(p) != "588Mi" || memLim(p) != "588Mi" {
				return fmt.Errorf("memory request %s limit %s, want 588Mi both", memReq(p), memLim(p))
			}
			if cpu := p.Spec.Containers[0].Resources.Requests.Cpu().String(); cpu != "300m" {
				return fmt.Errorf("cpu request %s, want the recommendation 300m", cpu)
			}
			if ann := p.Annotations[ballastv1.RuntimeFloorAnnotation]; !strings.Contains(ann, "app jvm floor 588Mi (JAVA_TOOL_OPTIONS -Xmx512m") {
				return fmt.Errorf("runtime-floor annotation %q", ann)
			}
			return nil
		})
	})

	t.Run("go GOMEMLIMIT floors memory at the limit + 5%", func(t *testing.T) {
		p, err := create(func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{envVar("GOMEMLIMIT", "300MiB")} })
		if err != nil {
			t.Fatal(err)
		}
		if memReq(p) != "315Mi" || memLim(p) != "315Mi" {
			t.Fatalf("memory request %s limit %s, want 315Mi both", memReq(p), memLim(p))
		}
	})

	t.Run("options from valueFrom are unknown: no floor", func(t *testing.T) {
		p, err := create(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "jvm"}, Key: "opts"}}}}
		})
		if err != nil {
			t.Fatal(err)
		}
		if memReq(p) != "192Mi" {
			t.Fatalf("memory request %s, want the recommendation 192Mi", memReq(p))
		}
		if ann, ok := p.Annotations[ballastv1.RuntimeFloorAnnotation]; ok {
			t.Fatalf("runtime-floor annotation %q on a pod without a floor", ann)
		}
	})

	podLevel := func(reqCPU, reqMem, limMem string) *corev1.ResourceRequirements {
		r := &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		if reqCPU != "" {
			r.Requests[corev1.ResourceCPU] = resource.MustParse(reqCPU)
		}
		if reqMem != "" {
			r.Requests[corev1.ResourceMemory] = resource.MustParse(reqMem)
		}
		if limMem != "" {
			r.Limits[corev1.ResourceMemory] = resource.MustParse(limMem)
		}
		return r
	}

	t.Run("podLevel size: pod-level resources follow the containers", func(t *testing.T) {
		p, err := create(func(p *corev1.Pod) { p.Spec.Resources = podLevel("2", "2Gi", "4Gi") })
		if err != nil {
			t.Fatal(err)
		}
		pr, c := p.Spec.Resources, p.Spec.Containers[0].Resources
		if pr.Requests.Cpu().Cmp(*c.Requests.Cpu()) != 0 || pr.Requests.Memory().Cmp(*c.Requests.Memory()) != 0 ||
			pr.Limits.Memory().Cmp(*c.Limits.Memory()) != 0 {
			t.Fatalf("pod-level %v / %v, container %v / %v", pr.Requests, pr.Limits, c.Requests, c.Limits)
		}
		if c.Requests.Cpu().String() != "300m" || memReq(p) != "192Mi" {
			t.Fatalf("container not sized: %v", c.Requests)
		}
		if ann := p.Annotations[ballastv1.AppliedPodResourcesAnnotation]; !strings.HasPrefix(ann, "requests cpu=300m,memory=192Mi; limits memory=") {
			t.Fatalf("applied-pod-resources %q", ann)
		}
		if p.Status.QOSClass != "" && p.Status.QOSClass != corev1.PodQOSBurstable {
			t.Fatalf("QoS %s", p.Status.QOSClass)
		}
	})

	t.Run("podLevel keep: a raise past the pod-level request is held, the rest applies", func(t *testing.T) {
		spec.PodLevel = "keep"
		e.setDefaultPolicy(t, spec)
		eventually(t, 30*time.Second, "keep observed", func() error {
			p, err := create(func(p *corev1.Pod) {
				p.Spec.Resources = podLevel("", "150Mi", "")
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("100Mi")
				p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("300Mi")
			})
			if err != nil {
				return err
			}
			if got := p.Spec.Resources.Requests.Memory().String(); got != "150Mi" {
				return fmt.Errorf("pod-level memory request %s, want 150Mi kept", got)
			}
			if memReq(p) != "100Mi" {
				return fmt.Errorf("memory request %s, want 100Mi held", memReq(p))
			}
			if cpu := p.Spec.Containers[0].Resources.Requests.Cpu().String(); cpu != "300m" {
				return fmt.Errorf("cpu request %s, want 300m", cpu)
			}
			if ann := p.Annotations[ballastv1.BoundedAnnotation]; !strings.Contains(ann, "pod_resources") {
				return fmt.Errorf("bounded annotation %q", ann)
			}
			if _, ok := p.Annotations[ballastv1.AppliedPodResourcesAnnotation]; ok {
				return fmt.Errorf("pod-level resources written under keep")
			}
			return nil
		})
	})
}

// TestResizeJVMRestartOnly: under a jvm policy a resize-mode pod's cpu is stepped in
// place while its memory shrink is held (restart_only: event and skip count); the pod's
// memory is unchanged on the API server.
func TestResizeJVMRestartOnly(t *testing.T) {
	e := startResizeEnv(t)
	spec := resizePolicy("3s")
	spec.Runtime = ballastv1.RuntimeSpec{Type: "jvm"}
	e.setDefaultPolicy(t, spec)
	e.makeNode(t, "rt-big", "8", "16Gi", 110, "linux")
	ns := e.namespace(t, "rt-jvm")
	p := boundPod("jvm", ns, "resize", "rt-jvm", "rt-big", res2("1", "1Gi", "2Gi"))
	p.Spec.Containers[0].Env = []corev1.EnvVar{envVar("JAVA_TOOL_OPTIONS", "-Xmx128m")}
	mustCreate(t, e.c, p)
	key := types.NamespacedName{Namespace: ns, Name: "jvm"}
	p = e.running(t, key)
	name := p.Annotations[ballastv1.ProfileRefAnnotation]
	e.readyProfile(t, name, 240, 192<<20)

	// cpu 1 → 300m recommended, 50% of the gap: 650m; memory 1Gi/2Gi → ~240Mi/230Mi is a
	// shrink: held.
	p = e.waitPod(t, key, "cpu stepped, memory kept", func(p *corev1.Pod) error {
		if cpuOf(p) != "650m" {
			return fmt.Errorf("cpu %s", cpuOf(p))
		}
		return nil
	})
	if memReq(p) != "1Gi" || memLim(p) != "2Gi" {
		t.Fatalf("memory shrunk in place: request %s limit %s", memReq(p), memLim(p))
	}
	e.waitEvent(t, p, "Normal RestartOnly memory shrink held until the pod restarts (runtime jvm): container app: memory limit 2Gi held")
	if got := metric(t, e.registry, "ballast_resize_skipped_total", map[string]string{"reason": "restart_only", "profile": name}); got < 1 {
		t.Errorf("restart_only skips = %v", got)
	}
	// The kubelet actuates; after the interval cpu steps again and memory still holds.
	e.kubelet(t, key, actuate)
	e.clock.Step(3 * time.Second)
	p = e.waitPod(t, key, "second cpu step", func(p *corev1.Pod) error {
		if cpuOf(p) != "475m" {
			return fmt.Errorf("cpu %s", cpuOf(p))
		}
		return nil
	})
	if memReq(p) != "1Gi" || memLim(p) != "2Gi" {
		t.Fatalf("memory shrunk in place: request %s limit %s", memReq(p), memLim(p))
	}
}

// TestResizePodLevel: under podLevel size, a resize-mode pod on a node whose kubelet
// declares InPlacePodLevelResourcesVerticalScaling gets its pod-level spec.resources
// resized in the same pods/resize patch as its container; a pod of the same profile on a
// node that does not declare it gets its container resized within the pod-level values,
// which stay as written.
func TestResizePodLevel(t *testing.T) {
	e := startResizeEnv(t)
	ctx := context.Background()
	spec := resizePolicy("3s")
	spec.PodLevel = "size"
	e.setDefaultPolicy(t, spec)
	e.makeNode(t, "pl-declared", "8", "16Gi", 110, "linux")
	e.makeNode(t, "pl-plain", "8", "16Gi", 110, "linux")
	n := &corev1.Node{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: "pl-declared"}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.DeclaredFeatures = []string{"InPlacePodLevelResourcesVerticalScaling"}
	if err := e.c.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	ns := e.namespace(t, "rt-pl")
	podLevel := &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	var keys []types.NamespacedName
	for _, node := range []string{"pl-declared", "pl-plain"} {
		p := boundPod(node, ns, "resize", "rt-pl", node, res2("1", "1Gi", "2Gi"))
		p.Spec.Resources = podLevel.DeepCopy()
		mustCreate(t, e.c, p)
		keys = append(keys, types.NamespacedName{Namespace: ns, Name: node})
	}
	p := e.running(t, keys[0])
	e.running(t, keys[1])
	e.readyProfile(t, p.Annotations[ballastv1.ProfileRefAnnotation], 240, 192<<20)

	declared := e.waitPod(t, keys[0], "container and pod level stepped", func(p *corev1.Pod) error {
		if cpuOf(p) != "650m" {
			return fmt.Errorf("cpu %s", cpuOf(p))
		}
		pr := p.Spec.Resources
		if pr.Requests.Cpu().String() != "650m" || pr.Requests.Memory().Cmp(*p.Spec.Containers[0].Resources.Requests.Memory()) != 0 ||
			pr.Limits.Memory().Cmp(*p.Spec.Containers[0].Resources.Limits.Memory()) != 0 {
			return fmt.Errorf("pod level %v / %v, container %v / %v", pr.Requests, pr.Limits,
				p.Spec.Containers[0].Resources.Requests, p.Spec.Containers[0].Resources.Limits)
		}
		return nil
	})
	e.waitEvent(t, declared, "Normal Resized in-place resize applied by Ballast")

	plain := e.waitPod(t, keys[1], "container stepped within the pod level", func(p *corev1.Pod) error {
		if cpuOf(p) != "650m" {
			return fmt.Errorf("cpu %s", cpuOf(p))
		}
		return nil
	})
	if pr := plain.Spec.Resources; pr.Requests.Cpu().String() != "1" || pr.Requests.Memory().String() != "1Gi" || pr.Limits.Memory().String() != "2Gi" {
		t.Fatalf("pod level changed on a node without the feature: %v / %v", pr.Requests, pr.Limits)
	}
}
