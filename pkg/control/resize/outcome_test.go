package resize

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

func TestObserveError(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	nodeCapacity := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403,
		Reason:  metav1.StatusReasonForbidden,
		Message: `pods "high" is forbidden: node didn't have enough allocatable resources: cpu, requested: 3000, allocatable: 2000`,
		Details: &metav1.StatusDetails{Name: "high", Kind: "pods", Causes: []metav1.StatusCause{{Type: "NodeCapacity"}}}}}
	cases := map[string]struct {
		err     error
		want    *resizeplan.Observation
		requeue bool
	}{
		"no error":           {},
		"403 NodeCapacity":   {err: nodeCapacity, want: &resizeplan.Observation{State: ballastv1.ResizeStateInfeasible, Message: nodeCapacity.Error()}},
		"403 without cause":  {err: apierrors.NewForbidden(gr, "p", fmt.Errorf("rbac")), want: &resizeplan.Observation{State: ballastv1.ResizeStateError, Message: `pods "p" is forbidden: rbac`}},
		"409 requeues":       {err: apierrors.NewConflict(gr, "p", fmt.Errorf("modified")), requeue: true},
		"pod gone":           {err: apierrors.NewNotFound(gr, "p")},
		"422 is an error":    {err: apierrors.NewBadRequest("must be less than or equal to cpu limit"), want: &resizeplan.Observation{State: ballastv1.ResizeStateError, Message: "must be less than or equal to cpu limit"}},
		"transport is error": {err: fmt.Errorf("dial tcp: refused"), want: &resizeplan.Observation{State: ballastv1.ResizeStateError, Message: "dial tcp: refused"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ObserveError(tc.err)
			if (err == ErrRequeue) != tc.requeue {
				t.Fatalf("requeue = %v (err %v), want %v", err == ErrRequeue, err, tc.requeue)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ObserveError (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTransitions walks every row of SPEC §9: state, event, outcome and annotations, once
// per transition.
func TestTransitions(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ts := now.Format(time.RFC3339)
	cases := map[string]struct {
		from    string
		obs     resizeplan.Observation
		outcome string
		event   string
		blocked bool
	}{
		"patch accepted":                 {from: "", obs: resizeplan.Observation{State: ballastv1.ResizeStatePending}},
		"API rejection NodeCapacity":     {from: "", obs: resizeplan.Observation{State: ballastv1.ResizeStateInfeasible, Message: "too big"}, outcome: resizeplan.OutcomeInfeasible, event: "Warning ResizeInfeasible in-place resize infeasible: too big", blocked: true},
		"API rejection other":            {from: "", obs: resizeplan.Observation{State: ballastv1.ResizeStateError, Message: "nope"}, outcome: resizeplan.OutcomeError, event: "Warning ResizeBlocked in-place resize failed: nope", blocked: true},
		"kubelet infeasible":             {from: ballastv1.ResizeStatePending, obs: resizeplan.Observation{State: ballastv1.ResizeStateInfeasible, Message: "swap"}, outcome: resizeplan.OutcomeInfeasible, event: "Warning ResizeInfeasible in-place resize infeasible: swap", blocked: true},
		"kubelet deferred":               {from: ballastv1.ResizeStatePending, obs: resizeplan.Observation{State: ballastv1.ResizeStateDeferred, Message: deferredMsg}, outcome: resizeplan.OutcomeDeferred, event: "Normal ResizeDeferred in-place resize deferred by the kubelet: " + deferredMsg},
		"kubelet error":                  {from: ballastv1.ResizeStateInProgress, obs: resizeplan.Observation{State: ballastv1.ResizeStateError, Message: "oom"}, outcome: resizeplan.OutcomeError, event: "Warning ResizeBlocked in-place resize failed: oom", blocked: true},
		"in progress":                    {from: ballastv1.ResizeStatePending, obs: resizeplan.Observation{State: ballastv1.ResizeStateInProgress}, outcome: resizeplan.OutcomeInProgress},
		"completed":                      {from: ballastv1.ResizeStateInProgress, obs: resizeplan.Observation{State: ballastv1.ResizeStateCompleted}, outcome: resizeplan.OutcomeCompleted, event: "Normal ResizeCompleted in-place resize completed"},
		"deferred resolved to completed": {from: ballastv1.ResizeStateDeferred, obs: resizeplan.Observation{State: ballastv1.ResizeStateCompleted}, outcome: resizeplan.OutcomeCompleted, event: "Normal ResizeCompleted in-place resize completed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr, ok := resizeplan.Next(tc.from, tc.obs)
			if !ok {
				t.Fatal("no transition")
			}
			if tr.Outcome() != tc.outcome {
				t.Errorf("outcome = %q, want %q", tr.Outcome(), tc.outcome)
			}
			var evs []string
			for _, e := range transitionEvents(&corev1.Pod{}, tr) {
				evs = append(evs, e.Type+" "+e.Reason+" "+e.Message)
			}
			if got := strings.Join(evs, "|"); got != tc.event {
				t.Errorf("event = %q, want %q", got, tc.event)
			}
			a := ForTransition(tr, now)
			want := Annotations{ballastv1.ResizeStateAnnotation: str(tc.obs.State), ballastv1.ResizeStateSinceAnnotation: &ts}
			if tc.blocked {
				want[ballastv1.ResizeBlockedAnnotation] = str(tc.obs.Message)
				want[ballastv1.ResizeBlockedAtAnnotation] = &ts
			}
			if diff := cmp.Diff(want, a); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			// Observing the same state again is no transition: no second event, count or -since.
			if _, again := resizeplan.Next(tc.obs.State, tc.obs); again {
				t.Error("same state observed twice made a second transition")
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	got := Truncate(long, maxBlockedBytes)
	if len(got) > maxBlockedBytes || len(got) != 256 || !strings.HasPrefix(long, got) {
		t.Fatalf("len %d", len(got))
	}
	if got := Truncate("a"+long, maxBlockedBytes); len(got) != 255 {
		t.Fatalf("split a rune: len %d", len(got))
	}
	if Truncate("short", 256) != "short" {
		t.Fatal("short text changed")
	}
}

func TestAnnotationsPatch(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := Applied(now)
	b, err := a.MergePatch("42")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"annotations":{"ballast.tightlinesoftware.com/last-resize":"2026-12-01T10:00:00Z",` +
		`"ballast.tightlinesoftware.com/resize-blocked":null,"ballast.tightlinesoftware.com/resize-blocked-at":null,` +
		`"ballast.tightlinesoftware.com/resize-state":"Pending","ballast.tightlinesoftware.com/resize-state-since":"2026-12-01T10:00:00Z"},` +
		`"resourceVersion":"42"}}`
	if string(b) != want {
		t.Errorf("patch\n got %s\nwant %s", b, want)
	}
	cur := map[string]string{ballastv1.LastResizeAnnotation: "2026-12-01T10:00:00Z", ballastv1.ResizeStateAnnotation: "Pending",
		ballastv1.ResizeStateSinceAnnotation: "2026-12-01T10:00:00Z"}
	if a.Changes(cur) {
		t.Error("identical annotations reported as a change")
	}
	cur[ballastv1.ResizeBlockedAnnotation] = "x"
	if !a.Changes(cur) {
		t.Error("a key to remove was not a change")
	}
}
