package ballast

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/policy"
)

type explainOptions struct {
	*globals
	output string
}

func newExplainCommand(g *globals) *cobra.Command {
	o := &explainOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "explain (POD | pod/NAME | deploy/NAME | sts/NAME | ds/NAME)",
		Short: "Explain why a pod has the requests and limits it has",
		Long: `Explain, in plain words, how Ballast sizes a pod: its identity tuple and profile, the
policy that governs it and why that policy won, how ready each container's statistics are,
the statistic x headroom behind every recommendation, what admission writes (including
every clamp to a limit, one-unit step-down and QoS pin), the annotations it wrote, and the
pod's resize state and history.

For a pod, admission is replayed on its controller's pod template (what the webhook saw).
For deploy/NAME, sts/NAME or ds/NAME the next pod of that workload is explained.`,
		Example: `  kubectl ballast explain web-7d9c6b5f4-x2x7q -n shop
  kubectl ballast explain deploy/web -n shop
  kubectl ballast explain pod/web-0 -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	addOutputFlag(cmd, &o.output, "text", outJSON, outYAML)
	return cmd
}

func (o *explainOptions) run(cmd *cobra.Command, target string) error {
	if o.output == "text" {
		o.output = ""
	}
	if err := checkOutput(o.output, outJSON, outYAML); err != nil {
		return err
	}
	ns, err := o.namespace(cmd, false)
	if err != nil {
		return err
	}
	if ns == "" {
		return usageError("explain needs one namespace (-n), not --all-namespaces")
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	subject, err := loadSubject(cmd.Context(), c, ns, target)
	if err != nil {
		return err
	}
	ex, err := explain(cmd.Context(), c, subject)
	if err != nil {
		return err
	}
	if o.output != "" {
		return printStructured(o.out(), o.output, ex)
	}
	return writeExplanation(o.out(), ex)
}

// subject is what explain looks at: a pod, or the next pod of a workload (Pod nil).
type subject struct {
	Namespace string
	Target    string // as the user wrote it, normalised (pod/x, deployment/y)
	Pod       *corev1.Pod
	// Template is the pod template admission saw (the controller's), nil when unknown.
	Template *corev1.PodTemplateSpec
	// Facts are the resolution inputs (labels, annotations, kinds) and Workload the
	// top-level workload's name.
	Facts    policy.PodFacts
	Workload string
}

var workloadKinds = map[string]string{
	"pod": "Pod", "pods": "Pod", "po": "Pod",
	"deploy": "Deployment", "deployment": "Deployment", "deployments": "Deployment", "deployment.apps": "Deployment",
	"sts": "StatefulSet", "statefulset": "StatefulSet", "statefulsets": "StatefulSet", "statefulset.apps": "StatefulSet",
	"ds": "DaemonSet", "daemonset": "DaemonSet", "daemonsets": "DaemonSet", "daemonset.apps": "DaemonSet",
}

// parseTarget reads POD, pod/NAME, deploy/NAME, sts/NAME or ds/NAME (kubectl's spellings:
// singular, plural, short and group-qualified kinds).
func parseTarget(target string) (kind, name string, err error) {
	kind, name = "Pod", target
	if i := strings.Index(target, "/"); i >= 0 {
		k, ok := workloadKinds[strings.ToLower(target[:i])]
		if !ok {
			return "", "", usageError("cannot explain %q: use POD, pod/NAME, deploy/NAME, sts/NAME or ds/NAME", target)
		}
		kind, name = k, target[i+1:]
	}
	if name == "" || strings.Contains(name, "/") {
		return "", "", usageError("cannot explain %q: want one object name", target)
	}
	return kind, name, nil
}

func loadSubject(ctx context.Context, c client.Client, ns, target string) (*subject, error) {
	kind, name, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	s := &subject{Namespace: ns, Target: strings.ToLower(kind) + "/" + name}
	notFound := func(err error) error {
		if apierrors.IsNotFound(err) {
			return &exitError{code: ExitUsage, err: fmt.Errorf("%s %q not found in namespace %s", strings.ToLower(kind), name, ns)}
		}
		return err
	}
	key := client.ObjectKey{Namespace: ns, Name: name}
	switch kind {
	case "Pod":
		pod := &corev1.Pod{}
		if err := c.Get(ctx, key, pod); err != nil {
			return nil, notFound(err)
		}
		s.Pod = pod
		k, w, ctrl := policy.TopLevel(pod.Name, ns, pod.OwnerReferences, ownerLookup(ctx, c))
		s.Facts = policy.PodFacts{Namespace: ns, Labels: pod.Labels, Annotations: pod.Annotations, Kind: k, ControllerKind: ctrl}
		s.Workload = w
		s.Template = controllerTemplate(ctx, c, pod)
	case "Deployment":
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, key, d); err != nil {
			return nil, notFound(err)
		}
		s.setTemplate(&d.Spec.Template, "Deployment", "ReplicaSet", name)
	case "StatefulSet":
		st := &appsv1.StatefulSet{}
		if err := c.Get(ctx, key, st); err != nil {
			return nil, notFound(err)
		}
		s.setTemplate(&st.Spec.Template, "StatefulSet", "StatefulSet", name)
	case "DaemonSet":
		ds := &appsv1.DaemonSet{}
		if err := c.Get(ctx, key, ds); err != nil {
			return nil, notFound(err)
		}
		s.setTemplate(&ds.Spec.Template, "DaemonSet", "DaemonSet", name)
	}
	return s, nil
}

func (s *subject) setTemplate(t *corev1.PodTemplateSpec, kind, ctrlKind, name string) {
	s.Template = t
	s.Workload = name
	s.Facts = policy.PodFacts{Namespace: s.Namespace, Labels: t.Labels, Annotations: t.Annotations, Kind: kind, ControllerKind: ctrlKind}
}

// controllerTemplate returns the pod template of pod's controller (ReplicaSet,
// StatefulSet, DaemonSet or Job), nil when it has none or it cannot be read.
func controllerTemplate(ctx context.Context, c client.Client, pod *corev1.Pod) *corev1.PodTemplateSpec {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil
	}
	key := client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}
	switch ref.Kind {
	case "ReplicaSet":
		o := &appsv1.ReplicaSet{}
		if c.Get(ctx, key, o) == nil {
			return &o.Spec.Template
		}
	case "StatefulSet":
		o := &appsv1.StatefulSet{}
		if c.Get(ctx, key, o) == nil {
			return &o.Spec.Template
		}
	case "DaemonSet":
		o := &appsv1.DaemonSet{}
		if c.Get(ctx, key, o) == nil {
			return &o.Spec.Template
		}
	case "Job":
		o := &batchv1.Job{}
		if c.Get(ctx, key, o) == nil {
			return &o.Spec.Template
		}
	}
	return nil
}

// admissionPod is the pod admission sized: the controller's template, else the pod itself.
func (s *subject) admissionPod() (*corev1.Pod, bool) {
	if s.Template != nil {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Labels: s.Template.Labels,
			Annotations: s.Template.Annotations}, Spec: *s.Template.Spec.DeepCopy()}, true
	}
	return s.Pod.DeepCopy(), false
}

func (s *subject) mode() string {
	if s.Pod != nil {
		return s.Pod.Labels[ballastv1.ModeLabel]
	}
	return s.Facts.Labels[ballastv1.ModeLabel]
}
