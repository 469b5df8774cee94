package resize

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// causeNodeCapacity is the status cause PodResizeValidator (1.36+) gives a resize whose
// requests exceed the node's allocatable.
const causeNodeCapacity = "NodeCapacity"

// ErrRequeue marks an API error after which the resize is tried again at once, not
// recorded: a 409 Conflict means Ballast decided on a stale pod.
var ErrRequeue = errors.New("resize conflicted with a newer pod; re-evaluating")

// ObserveError maps a rejected pods/resize call to a resize-state (SPEC §9): 403 with
// cause NodeCapacity ⇒ Infeasible, 409 ⇒ ErrRequeue (no state), NotFound ⇒ nil (the pod
// is gone, nothing to record), anything else ⇒ Error with the error text.
func ObserveError(err error) (*resizeplan.Observation, error) {
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsConflict(err):
		return nil, ErrRequeue
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err) && hasCause(err, causeNodeCapacity):
		return &resizeplan.Observation{State: ballastv1.ResizeStateInfeasible, Message: err.Error()}, nil
	default:
		return &resizeplan.Observation{State: ballastv1.ResizeStateError, Message: err.Error()}, nil
	}
}

func hasCause(err error, cause metav1.CauseType) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Type == cause {
			return true
		}
	}
	return false
}
