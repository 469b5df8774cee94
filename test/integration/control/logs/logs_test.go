package logs

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
)

const (
	operatorNS        = "ballast-system"
	webhookConfigName = "ballast"
)

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func mustCreate(t *testing.T, o client.Object) {
	t.Helper()
	if err := srv.Kube.Client.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// cluster installs what the chart would: the operator namespace, BallastConfig, a source
// and a valid default policy, and the webhook registration pointing at port.
func cluster(t *testing.T, port int) {
	t.Helper()
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}})
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	mustCreate(t, &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}}})
	mustCreate(t, &ballastv1.MetricsSource{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes-metrics"},
		Spec: ballastv1.MetricsSourceSpec{Type: ballastv1.SourceTypeKubernetesMetrics}})
	mustCreate(t, &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: ballastv1.ResourcePolicySpec{Metrics: metrics("kubernetes-metrics")}})
	ctx := context.Background()
	wh := harness.WebhookConfiguration(webhookConfigName, fmt.Sprintf("https://127.0.0.1:%d%s", port, ballastv1.WebhookPath), operatorNS)
	if err := srv.Kube.Client.Delete(ctx, wh); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	mustCreate(t, wh)
}

func metrics(source string) []ballastv1.MetricSpec {
	return []ballastv1.MetricSpec{{Resource: "cpu", Field: "request", Source: source, Aggregation: "p90"}}
}

func levels(p *process) map[string]int {
	out := map[string]int{}
	for _, l := range p.logs.lines(func(map[string]any) bool { return true }) {
		lv, _ := l["level"].(string)
		out[lv]++
	}
	return out
}

// TestKillSwitchSuppressionsAtWarn: with --log-level warn (common in production), each
// action the kill switch suppresses shows up as a warn line with kill_switch: true and
// kill_switch_reason (SPEC §10.2): the admission (webhook) and the stamp (enrollment).
func TestKillSwitchSuppressionsAtWarn(t *testing.T) {
	ctx := context.Background()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cluster(t, port)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: operatorNS}}
	mustCreate(t, cm)
	defer func() { _ = srv.Kube.Client.Delete(ctx, cm) }()
	p := startControl(t, port, "--log-level", "warn")

	const reason = "ConfigMap " + ballastv1.KillSwitchConfigMap
	var name string
	n := 0
	harness.Eventually(t, 30*time.Second, "an admission suppressed by the kill switch", func() error {
		n++ // the webhook sees no generated name yet, so every pod gets its own
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", n), Namespace: "team",
			Labels: map[string]string{"app": "shop", ballastv1.ModeLabel: ballastv1.ModeApply}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}}}}
		if err := srv.Kube.Client.Create(ctx, pod); err != nil {
			return err
		}
		if got := p.logs.lines(msg("admitting pod unchanged", "pod", pod.Name)); len(got) == 0 {
			return fmt.Errorf("no suppression line for pod %s", pod.Name)
		}
		if _, stamped := pod.Annotations[ballastv1.ProfileRefAnnotation]; stamped {
			return fmt.Errorf("pod %s was stamped under the kill switch", pod.Name)
		}
		name = pod.Name
		return nil
	})
	adm := p.logs.lines(msg("admitting pod unchanged", "pod", name))[0]
	for k, v := range map[string]any{"level": "warn", "kill_switch": true, "kill_switch_reason": reason,
		"action": "admission", "namespace": "team", "logger": "webhook"} {
		if adm[k] != v {
			t.Errorf("admission line %s = %v, want %v (%v)", k, adm[k], v, adm)
		}
	}
	enr := p.waitLines(t, "the enrollment stamp suppressed", 1, msg("not stamping pod", "action", "enroll", "namespace", "team"))[0]
	for k, v := range map[string]any{"level": "warn", "kill_switch": true, "kill_switch_reason": reason, "logger": "watcher"} {
		if enr[k] != v {
			t.Errorf("enrollment line %s = %v, want %v (%v)", k, enr[k], v, enr)
		}
	}
	if lv := levels(p); lv["info"] > 0 || lv["debug"] > 0 {
		t.Errorf("--log-level warn printed lines below warn: %v", lv)
	}
}

// TestPolicyProblemsOncePerChange: an out-of-range readiness value (the schema refuses an
// unparseable one at apply) logs one error line, and so does an unknown metrics source
// (the policy is invalid, reason UnknownMetricsSource); reconciling the same policy again logs nothing
// new; fixing and breaking it again logs again (SPEC §3.3, §11.4).
func TestPolicyProblemsOncePerChange(t *testing.T) {
	ctx := context.Background()
	c := srv.Kube.Client
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cluster(t, port)
	p := startControl(t, port, "--log-level", "debug")

	bad := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad-readiness"},
		Spec: ballastv1.ResourcePolicySpec{Metrics: metrics("kubernetes-metrics"), Readiness: ballastv1.Readiness{MaxCV: "-1"}}}
	unknown := &ballastv1.ClusterResourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: "unknown-source"},
		Spec: ballastv1.ResourcePolicySpec{Metrics: metrics("no-such-source")}}
	mustCreate(t, bad)
	mustCreate(t, unknown)
	invalid := msg("invalid policy", "policy", "bad-readiness")
	unknownSrc := msg("invalid policy", "policy", "unknown-source")

	line := p.waitLines(t, "invalid policy logged", 1, invalid)[0]
	if line["level"] != "error" || line["reason"] != "InvalidNumber" || !strings.Contains(fmt.Sprint(line["message"]), "maxCV") {
		t.Errorf("invalid-policy line = %v", line)
	}
	line = p.waitLines(t, "unknown source logged", 1, unknownSrc)[0]
	if line["level"] != "error" || line["reason"] != "UnknownMetricsSource" || !strings.Contains(fmt.Sprint(line["message"]), "no-such-source") {
		t.Errorf("unknown-source line = %v", line)
	}

	// A second reconcile of each (a label change triggers one; its "policy checked" debug
	// line says it ran) logs nothing new.
	touch := func(p *ballastv1.ClusterResourcePolicy, mod func(*ballastv1.ClusterResourcePolicy)) string {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(p.DeepCopy())
		mod(p)
		if err := c.Patch(ctx, p, patch); err != nil {
			t.Fatal(err)
		}
		return p.ResourceVersion
	}
	label := func(p *ballastv1.ClusterResourcePolicy) {
		p.Labels = map[string]string{"touched": fmt.Sprint(time.Now().UnixNano())}
	}
	for _, pol := range []*ballastv1.ClusterResourcePolicy{bad, unknown} {
		rv := touch(pol, label)
		p.waitLines(t, "second reconcile of "+pol.Name, 1, msg("policy checked", "policy", pol.Name, "resourceVersion", rv))
	}
	if n := len(p.logs.lines(invalid)); n != 1 {
		t.Errorf("invalid policy logged %d times after a second reconcile, want 1", n)
	}
	if n := len(p.logs.lines(unknownSrc)); n != 1 {
		t.Errorf("unknown source logged %d times after a second reconcile, want 1", n)
	}

	// Fixed, then broken again: logged again.
	rv := touch(bad, func(p *ballastv1.ClusterResourcePolicy) { p.Spec.Readiness.MaxCV = "0.5" })
	p.waitLines(t, "fixed policy reconciled", 1, msg("policy checked", "policy", "bad-readiness", "resourceVersion", rv, "valid", "True"))
	touch(bad, func(p *ballastv1.ClusterResourcePolicy) { p.Spec.Readiness.MaxCV = "-1" })
	p.waitLines(t, "re-broken policy logged again", 2, invalid)
	touch(unknown, func(p *ballastv1.ClusterResourcePolicy) { p.Spec.Metrics = metrics("another-missing-source") })
	p.waitLines(t, "a different unknown source logged", 2, unknownSrc)
}

// TestConfigProblemsOncePerChange: an unusable retentionWindow in BallastConfig logs one
// warn line; another reconcile of the same BallastConfig logs nothing new; fixing it and
// breaking it again logs again (SPEC §11.4).
func TestConfigProblemsOncePerChange(t *testing.T) {
	ctx := context.Background()
	c := srv.Kube.Client
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cluster(t, port)
	cfg := &ballastv1.BallastConfig{}
	if err := c.Get(ctx, client.ObjectKey{Name: ballastv1.BallastConfigName}, cfg); err != nil {
		t.Fatal(err)
	}
	set := func(mod func(*ballastv1.BallastConfig)) string {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(cfg), cfg); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cfg.DeepCopy())
		mod(cfg)
		if err := c.Patch(ctx, cfg, patch); err != nil {
			t.Fatal(err)
		}
		return cfg.ResourceVersion
	}
	set(func(b *ballastv1.BallastConfig) { b.Spec.RetentionWindow = "a week" })
	defer set(func(b *ballastv1.BallastConfig) { b.Spec.RetentionWindow = "168h" })
	p := startControl(t, port, "--log-level", "debug")
	bad := msg("unusable retentionWindow", "retentionWindow", "a week")
	line := p.waitLines(t, "unusable retentionWindow logged", 1, bad)[0]
	if line["level"] != "warn" || line["logger"] != "config" {
		t.Errorf("line = %v", line)
	}
	rv := set(func(b *ballastv1.BallastConfig) { b.Labels = map[string]string{"touched": "yes"} })
	p.waitLines(t, "BallastConfig reconciled again", 1, msg("config checked", "resourceVersion", rv))
	if n := len(p.logs.lines(bad)); n != 1 {
		t.Errorf("logged %d times after another reconcile, want 1", n)
	}
	rv = set(func(b *ballastv1.BallastConfig) { b.Spec.RetentionWindow = "72h" })
	p.waitLines(t, "fixed BallastConfig reconciled", 1, msg("config checked", "resourceVersion", rv))
	set(func(b *ballastv1.BallastConfig) { b.Spec.RetentionWindow = "a week" })
	p.waitLines(t, "re-broken retentionWindow logged again", 2, bad)
}
