package ballast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// errStep marks a failed step whose FAIL row is already printed.
var errStep = errors.New("step failed")

// enroll plans or performs one workload (SPEC §14.2–§14.4).
func (e *enroller) enroll(ctx context.Context, w *workload) error {
	repair := false
	if w.template().Labels[ballastv1.ModeLabel] == e.mode { // a Deployment at the mode
		converged, err := e.deploymentConverged(ctx, w)
		if err != nil {
			e.rep.row("FAIL", w, "examining: %v", err)
			return errStep
		}
		if converged {
			e.rep.atMode = append(e.rep.atMode, w.ref())
			return nil
		}
		repair = true
	}
	if why := w.unsettled(); why != "" {
		e.rep.row("SKIP", w, "%s", why)
		return nil
	}
	if w.d != nil {
		if _, why, err := currentReplicaSet(ctx, e.c, w.d); err != nil {
			e.rep.row("FAIL", w, "reading ReplicaSets: %v", err)
			return errStep
		} else if why != "" {
			e.rep.row("SKIP", w, "%s", why)
			return nil
		}
	}
	restart := !repair && !e.noRestart && w.replicas() > 1 && !w.onDelete()
	if !e.apply {
		e.rep.row("PLAN", w, "%s", e.planText(w, restart, repair))
		return nil
	}
	// Re-read live immediately before mutating and qualify again.
	if err := w.reread(ctx, e.c); err != nil {
		e.rep.row("FAIL", w, "re-reading: %v", err)
		return errStep
	}
	if why := w.unsettled(); why != "" {
		e.rep.row("SKIP", w, "%s", why)
		return nil
	}
	if restart {
		return e.restartRoute(ctx, w)
	}
	return e.noRestartRoute(ctx, w, repair)
}

func (e *enroller) planText(w *workload, restart, repair bool) string {
	switch {
	case repair:
		return fmt.Sprintf("half-enrolled at mode %s: repair without restart (label the current ReplicaSet and the pods)", e.mode)
	case restart:
		return fmt.Sprintf("add mode=%s to the template and restart (rolling update of %d replicas)", e.mode, w.replicas())
	case w.onDelete():
		return fmt.Sprintf("add mode=%s to the template (OnDelete) and label the live pods; no restart", e.mode)
	}
	return fmt.Sprintf("add mode=%s to the template and label the live pods; no restart", e.mode)
}

// deploymentConverged reports whether a Deployment already at the mode has its current
// ReplicaSet's template and every live pod at the mode too.
func (e *enroller) deploymentConverged(ctx context.Context, w *workload) (bool, error) {
	if w.d == nil {
		return true, nil
	}
	rs, why, err := currentReplicaSet(ctx, e.c, w.d)
	if err != nil || why != "" {
		return why != "", err // no unique ReplicaSet: nothing to repair from here
	}
	if rs.Spec.Template.Labels[ballastv1.ModeLabel] != e.mode {
		return false, nil
	}
	pods, err := selectorPods(ctx, e.c, w)
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Labels[ballastv1.ModeLabel] != e.mode {
			return false, nil
		}
	}
	return true, nil
}

// merge sends a JSON merge patch built from v.
func (e *enroller) merge(ctx context.Context, obj client.Object, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b))
}

type m = map[string]any

func templateLabelPatch(mode string, annotations map[string]string) m {
	meta := m{"labels": m{ballastv1.ModeLabel: mode}}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	return m{"spec": m{"template": m{"metadata": meta}}}
}

// undoStep reverts one mutation of a route in progress.
type undoStep struct {
	what string
	do   func(context.Context) error
}

func (e *enroller) push(what string, do func(context.Context) error) {
	e.undo = append(e.undo, undoStep{what: what, do: do})
}

func (e *enroller) pop() { e.undo = e.undo[:len(e.undo)-1] }

// rollback reverts the route's mutations still outstanding, newest first, with a fresh
// deadline (the command's context may be cancelled). It returns what it restored and the
// first error.
func (e *enroller) rollback(ctx context.Context) ([]string, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	var done []string
	for len(e.undo) > 0 {
		u := e.undo[len(e.undo)-1]
		if err := u.do(rctx); err != nil {
			return done, fmt.Errorf("%s: %w", u.what, err)
		}
		done = append(done, u.what)
		e.pop()
	}
	return done, nil
}

// fail prints the FAIL row of a step after rolling back what the route changed so far; when
// the context was cancelled it is the interrupt's breadcrumb: the in-flight object and how
// to restore (if the rollback failed) or resume it.
func (e *enroller) fail(ctx context.Context, w *workload, step string, err error, restore string) error {
	hint := "re-running the command resumes it"
	restored, rerr := e.rollback(ctx)
	switch {
	case rerr != nil:
		hint = fmt.Sprintf("restoring failed (%v)", rerr)
		if restore != "" {
			hint += "; " + restore
		}
		hint += "; then re-run the command"
	case len(restored) > 0:
		hint = "restored: " + strings.Join(restored, ", ") + "; re-running the command resumes it"
	}
	e.undo = nil
	if ctx.Err() != nil {
		e.rep.row("FAIL", w, "interrupted while %s; %s", step, hint)
		fmt.Fprintf(e.errOut, "interrupted: %s was in flight (%s); %s\n", w.ref(), step, hint)
		return ctx.Err()
	}
	e.rep.row("FAIL", w, "%s: %v; %s", step, err, hint)
	return errStep
}

// restartRoute: one merge patch adds the label and restartedAt to the template, then the
// rollout is awaited up to --timeout (SPEC §14.3).
func (e *enroller) restartRoute(ctx context.Context, w *workload) error {
	now := time.Now().UTC().Format(time.RFC3339)
	if err := e.merge(ctx, w.obj(), templateLabelPatch(e.mode, map[string]string{restartedAtKey: now})); err != nil {
		return e.fail(ctx, w, "patching the template", err, "")
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, e.timeout, true, func(ctx context.Context) (bool, error) {
		if err := w.reread(ctx, e.c); err != nil {
			return false, nil
		}
		return w.unsettled() == "", nil
	})
	switch {
	case ctx.Err() != nil:
		return e.fail(ctx, w, "waiting for the rollout", ctx.Err(), "the label is in the template; the rollout continues without this command")
	case err != nil:
		e.rep.row("WARN", w, "mode=%s added with a restart; the rollout did not finish within %s", e.mode, e.timeout)
		return nil
	}
	e.rep.row("OK", w, "mode=%s added; rolled out %d replica(s)", e.mode, w.replicas())
	return nil
}

// noRestartRoute labels the template and the running pods in place (SPEC §14.4), then
// verifies after --settle that no pod was replaced.
func (e *enroller) noRestartRoute(ctx context.Context, w *workload, repair bool) error {
	before, err := liveUIDs(ctx, e.c, w)
	if err != nil {
		return e.fail(ctx, w, "listing pods", err, "")
	}
	labelled := 0
	switch {
	case w.d != nil:
		labelled, err = e.deploymentInPlace(ctx, w)
	case w.onDelete():
		if err = e.merge(ctx, w.obj(), templateLabelPatch(e.mode, nil)); err != nil {
			err = e.fail(ctx, w, "patching the template", err, "")
		}
	case w.s != nil:
		err = e.statefulSetInPlace(ctx, w)
	default:
		err = e.daemonSetInPlace(ctx, w)
	}
	if err != nil {
		return err
	}
	n, err := e.labelPods(ctx, w)
	if err != nil {
		return e.fail(ctx, w, "labelling pods", err, "")
	}
	n += labelled
	select {
	case <-ctx.Done():
		return e.fail(ctx, w, "waiting --settle before verification", ctx.Err(), "")
	case <-time.After(e.settle):
	}
	after, err := liveUIDs(ctx, e.c, w)
	if err != nil {
		return e.fail(ctx, w, "verifying pods", err, "")
	}
	if !slices.Equal(before, after) {
		e.rep.row("WARN", w, "mode=%s added without restart, but the pods changed within %s (%d before, %d after)", e.mode, e.settle, len(before), len(after))
		return nil
	}
	what := "added"
	if repair {
		what = "repaired"
	}
	e.rep.row("OK", w, "mode=%s %s without restart; %d pod(s) labelled, none restarted", e.mode, what, n)
	return nil
}

// labelPods labels every selector-matched pod in any phase that is not at the mode.
func (e *enroller) labelPods(ctx context.Context, w *workload) (int, error) {
	return e.relabelPods(ctx, w, ballastv1.ModeLabel, e.mode)
}

func (e *enroller) relabelPods(ctx context.Context, w *workload, key, value string) (int, error) {
	pods, err := selectorPods(ctx, e.c, w)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods {
		p := &pods[i]
		if p.Labels[key] == value {
			continue
		}
		if err := e.merge(ctx, p, m{"metadata": m{"labels": m{key: value}}}); err != nil {
			return n, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		n++
	}
	return n, nil
}

// deploymentInPlace: label live pods; pause; patch the current ReplicaSet's template;
// patch the Deployment's template (reverting the ReplicaSet on failure); resume.
func (e *enroller) deploymentInPlace(ctx context.Context, w *workload) (int, error) {
	n, err := e.labelPods(ctx, w)
	if err != nil {
		return n, e.fail(ctx, w, "labelling pods", err, "")
	}
	return n, e.deploymentTemplates(ctx, w)
}

func (e *enroller) deploymentTemplates(ctx context.Context, w *workload) error {
	d := w.d
	resume := fmt.Sprintf("the Deployment may be paused; resume it with: kubectl -n %s rollout resume deployment/%s", d.Namespace, d.Name)
	rs, why, err := currentReplicaSet(ctx, e.c, d)
	if err != nil || why != "" {
		return e.fail(ctx, w, "finding the current ReplicaSet", fmt.Errorf("%v%s", err, why), "")
	}
	// Each undo step is pushed before its mutation: an interrupted call may still have
	// reached the API server, and every revert is harmless when it did not.
	e.push("resumed the Deployment", func(ctx context.Context) error { return e.merge(ctx, d, m{"spec": m{"paused": false}}) })
	if err := e.merge(ctx, d, m{"spec": m{"paused": true}}); err != nil {
		return e.fail(ctx, w, "pausing", err, resume)
	}
	e.push("reverted ReplicaSet "+rs.Name, e.revertLabel(rs, rs.Spec.Template.Labels[ballastv1.ModeLabel]))
	if err := e.merge(ctx, rs, templateLabelPatch(e.mode, nil)); err != nil {
		return e.fail(ctx, w, "patching ReplicaSet "+rs.Name, err, resume)
	}
	e.push("reverted the Deployment template", e.revertLabel(d, d.Spec.Template.Labels[ballastv1.ModeLabel]))
	if err := e.merge(ctx, d, templateLabelPatch(e.mode, nil)); err != nil {
		return e.fail(ctx, w, "patching the Deployment template", err, resume)
	}
	e.pop() // both templates carry the label now: keep them
	e.pop()
	if err := e.merge(ctx, d, m{"spec": m{"paused": false}}); err != nil {
		return e.fail(ctx, w, "resuming", err, resume)
	}
	e.pop()
	return nil
}
