package resize

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/resizeplan"
)

// maxBlockedBytes bounds the resize-blocked text (SPEC §8.4).
const maxBlockedBytes = 256

// Annotations is a set of pod annotation writes: a value sets the key, nil removes it. It
// renders as a JSON merge patch of metadata.annotations.
type Annotations map[string]*string

func stamp(t time.Time) *string {
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func str(s string) *string { return &s }

// Applied are the writes after an accepted resize patch (SPEC §8.4): last-resize and
// resize-state-since now, resize-state Pending, the blocked pair removed.
func Applied(now time.Time) Annotations {
	return Annotations{
		ballastv1.LastResizeAnnotation:       stamp(now),
		ballastv1.ResizeStateAnnotation:      str(ballastv1.ResizeStatePending),
		ballastv1.ResizeStateSinceAnnotation: stamp(now),
		ballastv1.ResizeBlockedAnnotation:    nil,
		ballastv1.ResizeBlockedAtAnnotation:  nil,
	}
}

// ForTransition are the writes of a state change (SPEC §9): resize-state and its -since;
// Infeasible and Error also set resize-blocked (the message, at most 256 bytes) and
// resize-blocked-at, so the blocked backoff of §8.2 step 2 applies.
func ForTransition(t resizeplan.Transition, now time.Time) Annotations {
	a := Annotations{
		ballastv1.ResizeStateAnnotation:      str(t.To),
		ballastv1.ResizeStateSinceAnnotation: stamp(now),
	}
	if t.Blocks() {
		a[ballastv1.ResizeBlockedAnnotation] = str(Truncate(t.Message, maxBlockedBytes))
		a[ballastv1.ResizeBlockedAtAnnotation] = stamp(now)
	}
	return a
}

// Truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// MergePatch renders the writes as a JSON merge patch. With resourceVersion set, the patch
// carries it as a precondition: the API server answers 409 if the pod changed since.
func (a Annotations) MergePatch(resourceVersion string) ([]byte, error) {
	meta := map[string]any{"annotations": a}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	b, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, fmt.Errorf("rendering annotation patch: %w", err)
	}
	return b, nil
}

// Changes reports whether applying a to current would change anything.
func (a Annotations) Changes(current map[string]string) bool {
	for k, v := range a {
		cur, ok := current[k]
		if (v == nil) == ok || (v != nil && *v != cur) {
			return true
		}
	}
	return false
}
