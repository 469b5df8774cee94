package ballast

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

type exportOptions struct {
	g      *globals
	output string
	dir    string
}

func newExportCommand(g *globals) *cobra.Command {
	o := &exportOptions{g: g}
	cmd := &cobra.Command{
		Use:   "export -o yaml [-n NS|-A] [--dir DIR]",
		Short: "Write kustomize patches setting the resources Ballast recommends, one per workload",
		Long: `export writes one kustomize strategic-merge patch per workload of the namespace (-n, or
every namespace with -A) whose profile has recommendations: the workload's apiVersion,
kind, name and namespace and, per long-running container, the requests and limits the
webhook would write at admission for its live pod template. To stdout as one multi-document
stream, or with --dir one file per workload, DIR/NAMESPACE/KIND-NAME.yaml.`,
		Example: `  kubectl ballast export -o yaml -n shop
  kubectl ballast export -o yaml -A --dir ballast-patches/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "yaml", "output format: yaml")
	cmd.Flags().StringVar(&o.dir, "dir", "", "write one file per workload below DIR instead of stdout")
	_ = cmd.MarkFlagDirname("dir")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// exported is one workload's patch.
type exported struct {
	apiVersion, kind, namespace, name string
	podPath                           []string // keys from spec down to the pod spec
	containers, sidecars              []sizing.ContainerChanges
}

func (o *exportOptions) run(cmd *cobra.Command) error {
	if err := checkOutput(o.output, "yaml"); err != nil {
		return err
	}
	ns, err := o.g.namespace(cmd, false)
	if err != nil {
		return err
	}
	c, err := o.g.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	src, err := newClusterSource(ctx, c)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	ws, err := listLiveWorkloads(ctx, c, ns)
	if err != nil {
		return err
	}
	var out []exported
	for _, w := range ws {
		e, note, err := exportOne(ctx, src, w)
		if err != nil {
			return err
		}
		if note != "" {
			fmt.Fprintf(o.g.streams.ErrOut, "note: %s %s/%s: %s\n", w.kind, w.namespace, w.name, note)
		}
		if e != nil {
			out = append(out, *e)
		}
	}
	if o.dir == "" {
		for i, e := range out {
			if i > 0 {
				fmt.Fprintln(o.g.out(), "---")
			}
			fmt.Fprint(o.g.out(), e.render())
		}
		return nil
	}
	for _, e := range out {
		p := filepath.Join(o.dir, e.namespace, strings.ToLower(e.kind)+"-"+e.name+".yaml")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(e.render()), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		fmt.Fprintf(o.g.out(), "wrote %s\n", p)
	}
	return nil
}

// liveWorkload is a top-level workload and its pod template.
type liveWorkload struct {
	apiVersion, kind, namespace, name string
	podPath                           []string
	ctrlKind                          string
	template                          corev1.PodTemplateSpec
}

// listLiveWorkloads lists the top-level workloads of ns ("" = all): Deployments,
// StatefulSets, DaemonSets, CronJobs, and Jobs, ReplicaSets and Pods no controller owns.
func listLiveWorkloads(ctx context.Context, c client.Reader, ns string) ([]liveWorkload, error) {
	var out []liveWorkload
	add := func(api, kind string, m metav1.ObjectMeta, t corev1.PodTemplateSpec, ctrl string, podPath ...string) {
		if kind != "Deployment" && kind != "StatefulSet" && kind != "DaemonSet" && kind != "CronJob" && metav1.GetControllerOf(&m) != nil {
			return
		}
		out = append(out, liveWorkload{apiVersion: api, kind: kind, namespace: m.Namespace, name: m.Name, podPath: podPath, ctrlKind: ctrl, template: t})
	}
	opts := []client.ListOption{client.InNamespace(ns)}
	deps := &appsv1.DeploymentList{}
	sts := &appsv1.StatefulSetList{}
	dss := &appsv1.DaemonSetList{}
	rss := &appsv1.ReplicaSetList{}
	cjs := &batchv1.CronJobList{}
	jobs := &batchv1.JobList{}
	pods := &corev1.PodList{}
	for _, l := range []client.ObjectList{deps, sts, dss, rss, cjs, jobs, pods} {
		if err := c.List(ctx, l, opts...); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	for _, d := range deps.Items {
		add("apps/v1", "Deployment", d.ObjectMeta, d.Spec.Template, "ReplicaSet", "template", "spec")
	}
	for _, s := range sts.Items {
		add("apps/v1", "StatefulSet", s.ObjectMeta, s.Spec.Template, "StatefulSet", "template", "spec")
	}
	for _, d := range dss.Items {
		add("apps/v1", "DaemonSet", d.ObjectMeta, d.Spec.Template, "DaemonSet", "template", "spec")
	}
	for _, r := range rss.Items {
		add("apps/v1", "ReplicaSet", r.ObjectMeta, r.Spec.Template, "ReplicaSet", "template", "spec")
	}
	for _, cj := range cjs.Items {
		add("batch/v1", "CronJob", cj.ObjectMeta, cj.Spec.JobTemplate.Spec.Template, "Job", "jobTemplate", "spec", "template", "spec")
	}
	for _, j := range jobs.Items {
		add("batch/v1", "Job", j.ObjectMeta, j.Spec.Template, "Job", "template", "spec")
	}
	for _, p := range pods.Items {
		add("v1", "Pod", p.ObjectMeta, corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, "")
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.name < b.name
	})
	return out, nil
}

// exportOne computes a workload's patch with the admission calculator: every value the
// policy manages and the profile recommends (and every request clamped to its limit), for
// the containers whose changes keep the pod's QoS class. nil with a note when there is
// nothing to export.
func exportOne(ctx context.Context, src recSource, w liveWorkload) (*exported, string, error) {
	facts := policy.PodFacts{Namespace: w.namespace, Labels: w.template.Labels, Annotations: w.template.Annotations, Kind: w.kind, ControllerKind: w.ctrlKind}
	wp, params, why, err := src.forTemplate(ctx, facts)
	if err != nil || wp == nil {
		return nil, why, err
	}
	recs, _ := sizing.ParseRecommendations(wp.Status.Containers)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Labels: w.template.Labels, Annotations: w.template.Annotations},
		Spec: *w.template.Spec.DeepCopy()}
	plan := sizing.Calculate(pod, recs, params, sizing.AtOnce)
	e := &exported{apiVersion: w.apiVersion, kind: w.kind, namespace: w.namespace, name: w.name, podPath: w.podPath}
	var pinned []string
	for _, cp := range plan.Containers {
		if cp.Pinned {
			pinned = append(pinned, cp.Name)
			continue
		}
		ch := sizing.ContainerChanges{Name: cp.Name, Sidecar: cp.Sidecar, Index: cp.Index}
		for _, rp := range cp.Resources {
			if exportsField(rp.Limit) {
				ch.Limits = merge(ch.Limits, rp.Resource, rp.Limit.Target)
			}
			if exportsField(rp.Request) {
				ch.Requests = merge(ch.Requests, rp.Resource, rp.Request.Target)
			}
		}
		if len(ch.Requests)+len(ch.Limits) == 0 {
			continue
		}
		if cp.Sidecar {
			e.sidecars = append(e.sidecars, ch)
		} else {
			e.containers = append(e.containers, ch)
		}
	}
	note := ""
	if len(pinned) > 0 {
		note = "container(s) " + strings.Join(pinned, ", ") + " left out: the change would move the pod out of its QoS class"
	}
	if len(e.containers)+len(e.sidecars) == 0 {
		return nil, orDefault(note, "profile "+wp.Name+" recommends nothing for its containers"), nil
	}
	return e, note, nil
}

func exportsField(f sizing.FieldPlan) bool {
	return (f.Managed && f.HasRecommended) || f.Changed || f.Clamped
}

func merge(l corev1.ResourceList, res corev1.ResourceName, u sizing.Units) corev1.ResourceList {
	if l == nil {
		l = corev1.ResourceList{}
	}
	l[res] = u.Quantity(res)
	return l
}

// render writes the patch as YAML: the identifying fields, then per container its name
// and resources, at the kind's pod spec path.
func (e exported) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n", e.apiVersion, e.kind, e.name, e.namespace)
	indent := 2
	for _, k := range e.podPath {
		fmt.Fprintf(&b, "%s%s:\n", strings.Repeat(" ", indent), k)
		indent += 2
	}
	list := func(key string, cs []sizing.ContainerChanges) {
		if len(cs) == 0 {
			return
		}
		pad := strings.Repeat(" ", indent)
		fmt.Fprintf(&b, "%s%s:\n", pad, key)
		for _, c := range cs {
			fmt.Fprintf(&b, "%s- name: %s\n%s  resources:\n", pad, c.Name, pad)
			renderBlock(&b, resourcesKV(c.Requests, c.Limits), indent+4, 2)
		}
	}
	list("initContainers", e.sidecars)
	list("containers", e.containers)
	return b.String()
}
