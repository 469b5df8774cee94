package ballast

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
)

// Where the plugin finds the agent: the chart's labels and the name of the container port
// that serves the debug endpoint for pods/proxy (agent.debug.proxy in the chart).
const (
	defaultAgentNamespace = "ballast-system"
	agentSelector         = "app.kubernetes.io/part-of=ballast,app.kubernetes.io/component=agent"
	debugProxyPortName    = "debug-proxy"
)

type nodeOptions struct {
	*globals
	output         string
	pod            string
	port           int
	serviceAccount string
}

func newNodeCommand(g *globals) *cobra.Command {
	o := &nodeOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "node NODE",
		Short: "Show what the node agent on NODE sees (its debug view, through the API server)",
		Long: `Show the Ballast node agent's debug view of NODE: discovery, the Valkey connection, the
local buffer, every source, each enrolled pod with the last sample of every signal, and
the series windows the agent holds.

The view is fetched through the API server's pods/proxy subresource. Your own credentials
never reach the agent: with them the plugin mints a 10-minute token of the chart's debug
service account for the audience ` + debug.Audience + `/NODE only (TokenRequest: create
serviceaccounts/token) and sends that one. The API server refuses it for anything else,
and the agents of other nodes refuse it too. You need list pods and get
pods/proxy in Ballast's namespace and create serviceaccounts/token on the debug service
account (the chart's <release>-debug Role grants exactly these), and the chart's
agent.debug.proxy.enabled=true. Any kind of kubeconfig credential works (tokens, client
certificates, exec plugins, --as).

-n names the namespace Ballast is installed in (default ` + defaultAgentNamespace + `).`,
		Example: `  kubectl ballast node worker-1
  kubectl ballast node worker-1 --pod shop/web-7d9c6b5f4-x2x7q
  kubectl ballast node worker-1 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return o.nodeNames(cmd.Context()), cobra.ShellCompDirectiveNoFileComp
		},
	}
	addOutputFlag(cmd, &o.output, "table", outJSON, outYAML)
	cmd.Flags().StringVar(&o.pod, "pod", "", "only this pod (NAMESPACE/NAME)")
	cmd.Flags().StringVar(&o.serviceAccount, "service-account", "", "the debug service account to mint the token for (default: the one the agent pod names, env "+debugServiceAccountEnv+")")
	cmd.Flags().IntVar(&o.port, "port", 0, "the agent's pods/proxy debug port (default: its container port named "+debugProxyPortName+")")
	return cmd
}

func (o *nodeOptions) run(cmd *cobra.Command, node string) error {
	if err := checkOutput(o.output, outJSON, outYAML); err != nil {
		return err
	}
	if o.pod != "" && strings.Count(o.pod, "/") != 1 {
		return usageError("--pod %q: must be NAMESPACE/NAME", o.pod)
	}
	ns := defaultAgentNamespace
	if f := cmd.Flags().Lookup("namespace"); f != nil && f.Changed {
		ns = *o.config.Namespace
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	cs, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return &exitError{code: ExitUsage, err: fmt.Errorf("connecting to the API server: %w", err)}
	}
	pod, port, err := o.agentPod(cmd.Context(), cs, ns, node)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	sa, err := o.debugServiceAccount(pod)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	token, err := mintDebugToken(cmd.Context(), cs, pod, sa)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	rep, err := fetchReport(cmd.Context(), cfg, cs, pod, port, token, o.pod)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	if o.output != "" && o.output != "table" {
		return printStructured(o.out(), o.output, rep)
	}
	return WriteNodeReport(o.out(), pod, rep)
}

// debugTokenTTL is the shortest lifetime a TokenRequest may ask for (10 minutes).
const debugTokenTTL int64 = 600

// debugServiceAccountEnv is the agent container's environment variable (the fallback of
// --debug-service-account) naming the service account whose tokens the agent serves.
const debugServiceAccountEnv = "BALLAST_DEBUG_SERVICE_ACCOUNT"

// debugServiceAccount is the service account the agent pod serves: --service-account, else
// what its container's environment names (NAMESPACE/NAME, rendered by the chart).
func (o *nodeOptions) debugServiceAccount(pod *corev1.Pod) (string, error) {
	ref := o.serviceAccount
	if ref == "" {
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == debugServiceAccountEnv && e.Value != "" {
					ref = e.Value
				}
			}
		}
	}
	if ref == "" {
		return "", fmt.Errorf("agent pod %s/%s names no debug service account (env %s): upgrade the chart, or give --service-account",
			pod.Namespace, pod.Name, debugServiceAccountEnv)
	}
	name := ref
	if ns, n, ok := strings.Cut(ref, "/"); ok {
		if ns != pod.Namespace {
			return "", fmt.Errorf("debug service account %s: not in the agent's namespace %s", ref, pod.Namespace)
		}
		name = n
	}
	if name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("debug service account %q: want NAME or NAMESPACE/NAME", ref)
	}
	return name, nil
}

// mintDebugToken creates, with the caller's credentials, a token of the debug service
// account sa for the agent pod's node only (audience debug.NodeAudience), living 10
// minutes. The caller's own token never leaves for the agent: the API server refuses the
// minted one for any API call (another audience) and every other agent refuses it
// (another node's audience), so an agent that keeps it gains nothing beyond its own view.
// The API server's RBAC decides who may mint it (create serviceaccounts/token on sa) and
// its audit log records who did.
func mintDebugToken(ctx context.Context, cs corev1client.CoreV1Interface, pod *corev1.Pod, sa string) (string, error) {
	tr, err := cs.ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences:         []string{debug.NodeAudience(pod.Spec.NodeName)},
		ExpirationSeconds: ptr.To(debugTokenTTL),
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("minting a debug token for %s/%s (needs create serviceaccounts/token on it): %w", pod.Namespace, sa, err)
	}
	return tr.Status.Token, nil
}

// agentPod finds the running agent pod of node and its debug-proxy port.
func (o *nodeOptions) agentPod(ctx context.Context, cs corev1client.CoreV1Interface, ns, node string) (*corev1.Pod, int, error) {
	list, err := cs.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: agentSelector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, 0, fmt.Errorf("finding the agent pod of node %s in %s: %w", node, ns, err)
	}
	var pod *corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			pod = p
			break
		}
	}
	if pod == nil {
		return nil, 0, fmt.Errorf("no running Ballast agent pod on node %s in namespace %s (labels %s; -n names Ballast's namespace)", node, ns, agentSelector)
	}
	return o.proxyPort(pod)
}

// proxyPort is the agent pod's debug-proxy port (or --port); without one, the error names
// the port-forward path with the debug token to mint for it.
func (o *nodeOptions) proxyPort(pod *corev1.Pod) (*corev1.Pod, int, error) {
	if o.port > 0 {
		return pod, o.port, nil
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == debugProxyPortName {
				return pod, int(p.ContainerPort), nil
			}
		}
	}
	hint := "kubectl -n " + pod.Namespace + " port-forward " + pod.Name + " 8082, then curl -H \"Authorization: Bearer $(kubectl -n " +
		pod.Namespace + " create token SERVICE_ACCOUNT --audience " + debug.NodeAudience(pod.Spec.NodeName) + " --duration 10m)\" http://127.0.0.1:8082" + debug.Path
	if sa, err := o.debugServiceAccount(pod); err == nil {
		hint = strings.Replace(hint, "SERVICE_ACCOUNT", sa, 1)
	}
	return nil, 0, fmt.Errorf("agent pod %s/%s has no %q port: install the chart with agent.debug.proxy.enabled=true (or give --port), or port-forward: %s",
		pod.Namespace, pod.Name, debugProxyPortName, hint)
}

// fetchReport gets the agent's JSON report through pods/proxy over TLS, with the minted
// debug token in debug.ProxyAuthHeader. The request goes through the caller's own HTTP
// client, so the API server authenticates and authorizes the caller as for any kubectl
// request, and removes the caller's Authorization before proxying.
func fetchReport(ctx context.Context, cfg *rest.Config, cs corev1client.CoreV1Interface, pod *corev1.Pod, port int, token, podFilter string) (debug.Report, error) {
	req := cs.RESTClient().Get().Namespace(pod.Namespace).Resource("pods").
		Name("https:" + pod.Name + ":" + strconv.Itoa(port)).SubResource("proxy").Suffix(debug.Path)
	if podFilter != "" {
		req = req.Param("pod", podFilter)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return debug.Report{}, fmt.Errorf("connecting to the API server: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL().String(), nil)
	if err != nil {
		return debug.Report{}, err
	}
	hreq.Header.Set(debug.ProxyAuthHeader, "Bearer "+token)
	hreq.Header.Set("Accept", "application/json")
	resp, err := hc.Do(hreq)
	if err != nil {
		return debug.Report{}, fmt.Errorf("reaching the agent pod %s/%s through the API server: %w", pod.Namespace, pod.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReportBytes))
	if err != nil {
		return debug.Report{}, fmt.Errorf("reading the agent's report: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		var rep debug.Report
		if err := json.Unmarshal(body, &rep); err != nil {
			return debug.Report{}, fmt.Errorf("decoding the agent's report: %w", err)
		}
		return rep, nil
	}
	// The API server answers its own refusals with a Status object; anything else is the
	// agent's answer, proxied as it came.
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		return debug.Report{}, fmt.Errorf("the API server refused (HTTP %d): %s", resp.StatusCode, st.Message)
	}
	return debug.Report{}, fmt.Errorf("the agent on %s refused (HTTP %d): %s", pod.Spec.NodeName, resp.StatusCode, strings.TrimSpace(string(body)))
}

// maxReportBytes bounds what the plugin reads of one report.
const maxReportBytes = 64 << 20

// nodeNames completes NODE.
func (o *nodeOptions) nodeNames(ctx context.Context) []string {
	cfg, err := o.restConfig()
	if err != nil {
		return nil
	}
	cs, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	list, err := cs.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out
}
