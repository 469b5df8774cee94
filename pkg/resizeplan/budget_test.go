package resizeplan

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

func TestCheckBudget(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration, kind, workload string) ballastv1.ResizeHistoryEntry {
		return ballastv1.ResizeHistoryEntry{Time: metav1.NewTime(now.Add(-ago)), Kind: kind, Workload: workload}
	}
	const w = "ns/Deployment/web"
	base := func(edit func(*BudgetInput)) BudgetInput {
		in := BudgetInput{Now: now, Workload: w, WorkloadPods: 10,
			Resize: policy.Resize{Interval: 15 * time.Minute, Cooldown: time.Hour,
				PerWorkload: policy.IntOrPercent{Value: 10, Percent: true}}}
		edit(&in)
		return in
	}
	cases := map[string]struct {
		in        BudgetInput
		want      string
		wantUntil time.Time
		wantMsg   string
	}{
		"a shrink with no history goes": {in: base(func(in *BudgetInput) { in.Shrink = true })},
		"a shrink 20m after a raise-back waits for the 1h cooldown": {
			in: base(func(in *BudgetInput) {
				in.Shrink = true
				in.History = []ballastv1.ResizeHistoryEntry{at(20*time.Minute, ballastv1.ResizeHistoryRaiseBack, w)}
			}),
			want: HoldRaiseCooldown, wantUntil: now.Add(40 * time.Minute), wantMsg: "raise-back of the workload at 2026-12-04T11:40:00Z"},
		"an OOM kill and a pressure raise start the cooldown too": {
			in: base(func(in *BudgetInput) {
				in.Shrink = true
				in.History = []ballastv1.ResizeHistoryEntry{at(50*time.Minute, ballastv1.ResizeHistoryOOM, w), at(10*time.Minute, ballastv1.ResizeHistoryPressure, w)}
			}),
			want: HoldRaiseCooldown, wantUntil: now.Add(50 * time.Minute)},
		"a raise-back older than the cooldown no longer holds": {
			in: base(func(in *BudgetInput) {
				in.Shrink = true
				in.History = []ballastv1.ResizeHistoryEntry{at(61*time.Minute, ballastv1.ResizeHistoryRaiseBack, w)}
			})},
		"another workload's raise-back does not hold this one": {
			in: base(func(in *BudgetInput) {
				in.Shrink = true
				in.History = []ballastv1.ResizeHistoryEntry{at(time.Minute, ballastv1.ResizeHistoryRaiseBack, "ns/Deployment/api")}
			})},
		"a growth is never held by the cooldown": {
			in: base(func(in *BudgetInput) {
				in.History = []ballastv1.ResizeHistoryEntry{at(time.Minute, ballastv1.ResizeHistoryOOM, w)}
			})},
		"a second shrink pass within the interval waits": {
			in: base(func(in *BudgetInput) {
				in.Shrink = true
				in.History = []ballastv1.ResizeHistoryEntry{at(5*time.Minute, ballastv1.ResizeHistoryShrink, w)}
			}),
			want: HoldShrinkRate, wantUntil: now.Add(10 * time.Minute)},
		"shrinks of this pass do not rate-limit the pass": {
			in: base(func(in *BudgetInput) {
				in.Shrink, in.ShrunkThisPass = true, true
				in.History = []ballastv1.ResizeHistoryEntry{at(0, ballastv1.ResizeHistoryShrink, w)}
			})},
		"a later pass at the same instant is still rate-limited": {
			in: base(func(in *BudgetInput) {
				in.Shrink = true
				in.History = []ballastv1.ResizeHistoryEntry{at(0, ballastv1.ResizeHistoryShrink, w)}
			}),
			want: HoldShrinkRate, wantUntil: now.Add(15 * time.Minute)},
		"a shrink one interval later goes": {
			in: base(func(in *BudgetInput) {
				in.Shrink = true
				in.History = []ballastv1.ResizeHistoryEntry{at(15*time.Minute, ballastv1.ResizeHistoryShrink, w)}
			})},
		"the cooldown is checked before the rate": {
			in: base(func(in *BudgetInput) {
				in.Shrink = true
				in.History = []ballastv1.ResizeHistoryEntry{at(5*time.Minute, ballastv1.ResizeHistoryShrink, w), at(2*time.Minute, ballastv1.ResizeHistoryRaiseBack, w)}
			}),
			want: HoldRaiseCooldown, wantUntil: now.Add(58 * time.Minute)},
		"a disruptive resize at the workload cap (10% of 10 pods = 1) waits": {
			in:   base(func(in *BudgetInput) { in.Disruptive, in.InFlightWorkload = true, 1 }),
			want: HoldConcurrency, wantMsg: "perWorkload 10% of 10 pods allows 1"},
		"10% of 30 pods allows 3": {
			in: base(func(in *BudgetInput) { in.Disruptive, in.InFlightWorkload, in.WorkloadPods = true, 2, 30 })},
		"a non-disruptive resize ignores the caps and the PDB": {
			in: base(func(in *BudgetInput) { in.InFlightWorkload, in.InFlightNode, in.PDBs = 5, 5, []int32{0} })},
		"the node cap holds": {
			in: base(func(in *BudgetInput) {
				in.Disruptive, in.InFlightNode, in.Resize.PerNode = true, 2, 2
			}),
			want: HoldNodeConcurrency},
		"no node cap when perNode is unset": {
			in: base(func(in *BudgetInput) { in.Disruptive, in.InFlightNode = true, 50 })},
		"a PDB allowing no disruption holds": {
			in:   base(func(in *BudgetInput) { in.Disruptive, in.PDBs = true, []int32{3, 0} }),
			want: HoldBudget},
		"PDBs allowing disruptions let it go": {
			in: base(func(in *BudgetInput) { in.Disruptive, in.PDBs = true, []int32{1, 2} })},
		"the workload cap is checked before the node cap and the PDB": {
			in: base(func(in *BudgetInput) {
				in.Disruptive, in.InFlightWorkload, in.InFlightNode, in.Resize.PerNode, in.PDBs = true, 1, 1, 1, []int32{0}
			}),
			want: HoldConcurrency},
		"a disruptive shrink in cooldown reports the cooldown first": {
			in: base(func(in *BudgetInput) {
				in.Shrink, in.Disruptive, in.PDBs = true, true, []int32{0}
				in.History = []ballastv1.ResizeHistoryEntry{at(time.Minute, ballastv1.ResizeHistoryOOM, w)}
			}),
			want: HoldRaiseCooldown, wantUntil: now.Add(59 * time.Minute)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CheckBudget(tc.in)
			if got.Reason != tc.want || !got.Until.Equal(tc.wantUntil) || !strings.Contains(got.Message, tc.wantMsg) {
				t.Fatalf("CheckBudget = %+v; want reason %q until %v message containing %q", got, tc.want, tc.wantUntil, tc.wantMsg)
			}
			if got.Held() != (tc.want != "") {
				t.Fatalf("Held() = %v", got.Held())
			}
		})
	}
}

func TestDisruptive(t *testing.T) {
	mk := func(policies ...corev1.ContainerResizePolicy) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", ResizePolicy: policies,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}}}}}
	}
	restartMem := corev1.ContainerResizePolicy{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}
	noRestartCPU := corev1.ContainerResizePolicy{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}
	cpuTo := func(v string) []sizing.ContainerChanges {
		return []sizing.ContainerChanges{{Name: "app", Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}}
	}
	memLimTo := func(v string) []sizing.ContainerChanges {
		return []sizing.ContainerChanges{{Name: "app", Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(v)}}}
	}
	jvm := func(_ string, r corev1.ResourceName, lowered bool) bool { return r == corev1.ResourceMemory && lowered }
	cases := map[string]struct {
		pod     *corev1.Pod
		changes []sizing.ContainerChanges
		hook    RestartHook
		want    bool
	}{
		"no resizePolicy: in place":                  {pod: mk(), changes: memLimTo("1536Mi")},
		"memory RestartContainer, memory changes":    {pod: mk(restartMem), changes: memLimTo("1536Mi"), want: true},
		"memory RestartContainer, only cpu changes":  {pod: mk(restartMem, noRestartCPU), changes: cpuTo("300m")},
		"a change to the same value changes nothing": {pod: mk(restartMem), changes: memLimTo("2Gi")},
		"the hook: a memory cut restarts":            {pod: mk(), changes: memLimTo("1Gi"), hook: jvm, want: true},
		"the hook: a memory raise does not":          {pod: mk(), changes: memLimTo("3Gi"), hook: jvm},
	}
	for name, tc := range cases {
		if got := Disruptive(tc.pod, tc.changes, tc.hook); got != tc.want {
			t.Errorf("%s: Disruptive = %v, want %v", name, got, tc.want)
		}
	}
}

func TestWorkloadOf(t *testing.T) {
	owned := func(kind, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-1", Namespace: "ns", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr.To(true)}}}}
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"bare pod":                      {pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, want: "ns/Pod/p"},
		"Deployment's ReplicaSet":       {pod: owned("ReplicaSet", "web-5d4f9", map[string]string{"pod-template-hash": "5d4f9"}), want: "ns/Deployment/web"},
		"bare ReplicaSet":               {pod: owned("ReplicaSet", "web", nil), want: "ns/ReplicaSet/web"},
		"StatefulSet":                   {pod: owned("StatefulSet", "db", nil), want: "ns/StatefulSet/db"},
		"hash label not the name's end": {pod: owned("ReplicaSet", "web-abc", map[string]string{"pod-template-hash": "zzz"}), want: "ns/ReplicaSet/web-abc"},
	}
	for name, tc := range cases {
		if got := WorkloadOf(tc.pod); got != tc.want {
			t.Errorf("%s: WorkloadOf = %q, want %q", name, got, tc.want)
		}
	}
}

func TestAddHistory(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	e := func(s int, kind string) ballastv1.ResizeHistoryEntry {
		return ballastv1.ResizeHistoryEntry{Time: metav1.NewTime(t0.Add(time.Duration(s) * time.Second)), Kind: kind, Workload: "w"}
	}
	got := AddHistory([]ballastv1.ResizeHistoryEntry{e(2, "shrink"), e(0, "raise")}, e(1, "oom"), e(2, "shrink"))
	if diff := cmp.Diff([]ballastv1.ResizeHistoryEntry{e(0, "raise"), e(1, "oom"), e(2, "shrink")}, got); diff != "" {
		t.Errorf("ordered, deduplicated (-want +got):\n%s", diff)
	}
	// Sub-second times are stored as whole seconds, so a re-read entry matches its cache copy.
	frac := e(3, "raise")
	frac.Time = metav1.NewTime(frac.Time.Add(400 * time.Millisecond))
	if got := AddHistory([]ballastv1.ResizeHistoryEntry{e(3, "raise")}, frac); len(got) != 1 {
		t.Errorf("sub-second duplicate kept: %v", got)
	}
	var many []ballastv1.ResizeHistoryEntry
	for i := range MaxHistory + 10 {
		many = append(many, e(i, "shrink"))
	}
	got = AddHistory(nil, many...)
	if len(got) != MaxHistory || !got[0].Time.Equal(&many[10].Time) {
		t.Errorf("bounded: len %d, first %v; want %d from %v", len(got), got[0].Time, MaxHistory, many[10].Time)
	}
}
