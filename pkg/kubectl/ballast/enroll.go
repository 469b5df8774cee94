package ballast

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

type enrollOptions struct {
	*globals
	mode           string
	apply          bool
	identityLabels []string
	ignore         string
	noRestart      bool
	remode         bool
	timeout        int
	settle         int
}

func newEnrollCommand(g *globals) *cobra.Command {
	o := &enrollOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "enroll --mode measure|apply|resize [--apply]",
		Short: "Add the Ballast mode label to the pod templates of Deployments, StatefulSets and DaemonSets",
		Long: `Enroll every Deployment, StatefulSet and DaemonSet whose pod template carries all identity
labels with a non-empty value: add ballast.tightlinesoftware.com/mode=<mode> to the template
and bring the existing pods along (SPEC §14).

Without --apply only the plan is printed. Workloads with more than one replica (and not
OnDelete) take the restart route: one patch adds the label and a restartedAt annotation,
then the rollout is awaited. One replica, OnDelete, or --no-restart take a no-restart route
that labels the running pods in place.

Rows start with PLAN, OK, WARN, SKIP, FAIL or NOTE; the last line is the summary.
Exit code 1: usage or prerequisite error; 2: a row is FAIL; else 0. Re-running is safe.`,
		Example: `  kubectl ballast enroll --mode measure                     # the plan, cluster-wide
  kubectl ballast enroll --mode measure -n shop --apply
  kubectl ballast enroll --mode apply --remode --no-restart --apply`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.mode, "mode", "", "enrollment mode: measure, apply or resize (required)")
	f.BoolVar(&o.apply, "apply", false, "perform the changes (default: print the plan only)")
	f.StringSliceVar(&o.identityLabels, "identity-labels", nil,
		"identity label keys (default: BallastConfig ballast's, else app.kubernetes.io/name,app.kubernetes.io/component)")
	f.StringVar(&o.ignore, "ignore", "", "skip workloads whose name matches this regular expression")
	f.BoolVar(&o.noRestart, "no-restart", false, "always use the no-restart routes")
	f.BoolVar(&o.remode, "remode", false, "also target workloads enrolled at a different mode")
	f.IntVar(&o.timeout, "timeout", 300, "seconds to wait for a rollout (restart route); a timeout is a WARN")
	f.IntVar(&o.settle, "settle", 8, "seconds to wait before verifying that a no-restart route restarted nothing")
	_ = cmd.RegisterFlagCompletionFunc("mode", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{ballastv1.ModeMeasure, ballastv1.ModeApply, ballastv1.ModeResize}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// report collects the rows and the counts of the summary line.
type report struct {
	w                                   io.Writer
	enrolled, failed, warnings, skipped int
	atMode                              []string
	planned                             int
}

func (r *report) row(verb string, w *workload, format string, args ...any) {
	fmt.Fprintf(r.w, "%-4s %s %s/%s: %s\n", verb, w.Kind, w.Namespace, w.Name, fmt.Sprintf(format, args...))
	switch verb {
	case "OK":
		r.enrolled++
	case "FAIL":
		r.failed++
	case "WARN":
		r.warnings++
	case "SKIP":
		r.skipped++
	case "PLAN":
		r.planned++
	}
}

func (r *report) note(format string, args ...any) {
	fmt.Fprintf(r.w, "NOTE %s\n", fmt.Sprintf(format, args...))
}

func (r *report) summary() {
	fmt.Fprintf(r.w, "Summary: %d enrolled, %d failed, %d warning(s), %d skipped.\n", r.enrolled, r.failed, r.warnings, r.skipped)
}

func (o *enrollOptions) run(cmd *cobra.Command) error {
	if !ballastv1.ValidMode(o.mode) {
		if o.mode == "" {
			return usageError("--mode is required (measure, apply or resize)\nSee 'kubectl ballast enroll --help' for usage.")
		}
		return usageError("invalid --mode %q: must be one of measure, apply, resize", o.mode)
	}
	var ignore *regexp.Regexp
	if o.ignore != "" {
		re, err := regexp.Compile(o.ignore)
		if err != nil {
			return usageError("invalid --ignore %q: %v", o.ignore, err)
		}
		ignore = re
	}
	if o.timeout <= 0 || o.settle < 0 {
		return usageError("--timeout must be > 0 and --settle >= 0")
	}
	ns, err := o.namespace(cmd, true)
	if err != nil {
		return err
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	keys := o.identityLabels
	if len(keys) == 0 {
		switch ks, err := identityLabels(ctx, c); {
		case errors.Is(err, errNoConfig):
			keys = defaultIdentityLabels
		case err != nil:
			return &exitError{code: ExitUsage, err: err}
		default:
			keys = ks
		}
	}
	ws, err := listWorkloads(ctx, c, ns)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	e := &enroller{c: c, mode: o.mode, apply: o.apply, noRestart: o.noRestart,
		timeout: time.Duration(o.timeout) * time.Second, settle: time.Duration(o.settle) * time.Second,
		rep: &report{w: o.out()}, errOut: o.streams.ErrOut}
	if !o.apply {
		e.caveats()
	}
	for i := range ws {
		w := &ws[i]
		if !hasTuple(w.template().Labels, keys) {
			continue
		}
		if ignore != nil && ignore.MatchString(w.Name) {
			e.rep.row("SKIP", w, "name matches --ignore %q", o.ignore)
			continue
		}
		cur := w.template().Labels[ballastv1.ModeLabel]
		switch {
		case cur == o.mode && w.Kind != kindDeployment:
			e.rep.atMode = append(e.rep.atMode, w.ref())
			continue
		case cur != "" && cur != o.mode && !o.remode:
			e.rep.row("WARN", w, "enrolled at mode %s, unchanged (use --remode to change it to %s)", cur, o.mode)
			continue
		}
		if err := e.enroll(ctx, w); err != nil && ctx.Err() != nil {
			break // interrupted: the breadcrumb is printed
		}
	}
	if len(e.rep.atMode) > 0 {
		sort.Strings(e.rep.atMode)
		e.rep.note("%d workload(s) already at mode %s: %s", len(e.rep.atMode), o.mode, strings.Join(e.rep.atMode, ", "))
	}
	if !o.apply {
		e.rep.note("dry run: %d workload(s) planned, nothing changed; re-run with --apply to perform the plan", e.rep.planned)
	}
	e.rep.summary()
	if e.rep.failed > 0 {
		return &exitError{code: ExitFail, silent: true}
	}
	return nil
}

func (e *enroller) caveats() {
	switch e.mode {
	case ballastv1.ModeApply:
		e.rep.note("caveat: at --mode apply, pods labelled in place keep their resources until they are recreated")
	case ballastv1.ModeResize:
		e.rep.note("caveat: at --mode resize, pods labelled in place are corrected in place once their profile is Sufficient")
	case ballastv1.ModeMeasure:
		e.rep.note("caveat: --mode measure never sizes a pod; it only records usage")
	}
	e.rep.note("caveat: update GitOps sources too, or they revert the label")
}

func hasTuple(labels map[string]string, keys []string) bool {
	for _, k := range keys {
		if labels[k] == "" {
			return false
		}
	}
	return len(keys) > 0
}

// enroller performs (or plans) the enrollment of one workload at a time.
type enroller struct {
	c         client.Client
	mode      string
	apply     bool
	noRestart bool
	timeout   time.Duration
	settle    time.Duration
	rep       *report
	errOut    io.Writer
	undo      []undoStep // mutations of the route in progress, reverted on failure
}
