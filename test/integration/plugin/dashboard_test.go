package plugin

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ballastk8s/ballast/test/harness"
)

// helmTemplate renders the chart with the real helm binary and returns the documents.
func helmTemplate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := harness.Tool("helm")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, append([]string{"template", "ballast", filepath.Join(harness.RepoRoot(), "charts", "ballast"),
		"--namespace", "ballast-system", "--set=valkey.auth.allowGeneratedPasswordsOffline=true"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "c"), "HELM_CONFIG_HOME="+filepath.Join(home, "f"),
		"HELM_DATA_HOME="+filepath.Join(home, "d"), "KUBECONFIG="+filepath.Join(home, "none"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: errb.Bytes()}
	}
	return out.String(), nil
}

func dashboardConfigMap(t *testing.T, rendered string) *corev1.ConfigMap {
	t.Helper()
	for _, doc := range strings.Split(rendered, "\n---\n") {
		if !strings.Contains(doc, "# Source: ballast/templates/dashboard-configmap.yaml") {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := yaml.UnmarshalStrict([]byte(doc), cm); err != nil {
			t.Fatalf("decoding the dashboard ConfigMap: %v", err)
		}
		return cm
	}
	return nil
}

// knownMetrics are the Ballast series the dashboard may use: SPEC §11.2's instruments as
// exposed, the profiles controller's savings gauges, the node agent's (from docs/node-agent.md) and the kube-state-metrics
// custom-resource-state ones the chart's dashboards/kube-state-metrics-ballast.yaml defines.
func knownMetrics(t *testing.T) []string {
	known := []string{"ballast_samples_collected_total", "ballast_fetch_errors_total", "ballast_profiles_threshold_met_total",
		"ballast_profiles", "ballast_pods_processed_total", "ballast_workload_profiles_created_total", "ballast_workload_profiles_purged_total",
		"ballast_webhook_mutations_total", "ballast_apply_applied_total", "ballast_apply_skipped_total", "ballast_recommendation_clamped_total",
		"ballast_resize_applied_total", "ballast_resize_failed_total", "ballast_resize_skipped_total", "ballast_resize_outcome_total",
		"ballast_kill_switch_transitions_total", "ballast_kill_switch_active", "ballast_kill_switch_suppressed_total", "ballast_policies_invalid",
		// issue 31's savings gauges (pkg/control/profiles, docs/kubectl-ballast.md "report").
		"ballast_profile_reclaimable_cpu_cores", "ballast_profile_reclaimable_memory_bytes", "ballast_profile_monthly_savings"}
	doc, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "docs", "node-agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Rows of the metrics table: | `name{labels}` | kind | … ; a histogram adds _sum/_count.
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)(?:\\{[^}]*\\})?`(?:, `([a-z_]+)(?:\\{[^}]*\\})?`)? \\| ([a-z, ]+) \\|")
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, name := range m[1:3] {
			if name == "" {
				continue
			}
			known = append(known, "ballast_node_"+name)
			if strings.Contains(m[3], "histogram") {
				known = append(known, "ballast_node_"+name+"_sum", "ballast_node_"+name+"_count")
			}
		}
	}
	ksm, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "charts", "ballast", "dashboards", "kube-state-metrics-ballast.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^        - name: ([a-z_]+)$`).FindAllStringSubmatch(string(ksm), -1) {
		known = append(known, "ballast_profile_"+m[1])
	}
	return known
}

func TestDashboard(t *testing.T) {
	def, err := helmTemplate(t)
	if err != nil {
		t.Fatalf("default render: %v", err)
	}
	if dashboardConfigMap(t, def) != nil {
		t.Error("the dashboard ConfigMap is rendered by default; grafana.dashboard.enabled defaults to false")
	}
	out, err := helmTemplate(t, "--set", "grafana.dashboard.enabled=true")
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	cm := dashboardConfigMap(t, out)
	if cm == nil {
		t.Fatal("no dashboard ConfigMap with grafana.dashboard.enabled=true")
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "ballast-system" {
		t.Errorf("ConfigMap %s/%s labels %v: want grafana_dashboard: \"1\" in the release namespace", cm.Namespace, cm.Name, cm.Labels)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["ballast.json"]), &dash); err != nil {
		t.Fatalf("ballast.json is not JSON: %v", err)
	}
	known := knownMetrics(t)
	series := regexp.MustCompile(`\bballast_[a-z_]+`)
	var titles []string
	for _, p := range dash.Panels {
		titles = append(titles, p.Title)
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range series.FindAllString(tg.Expr, -1) {
				if strings.HasPrefix(name, "ballast_tightlinesoftware_com") {
					continue // inside the annotation label name
				}
				if !slices.Contains(known, name) {
					t.Errorf("panel %q queries %s, which neither SPEC §11.2, docs/node-agent.md nor the kube-state-metrics config defines", p.Title, name)
				}
			}
		}
	}
	for _, want := range []string{"CPU: requests vs recommendation vs usage", "Resize outcomes", "Oldest Deferred resize age", "Agent CPU",
		"Reclaimable cpu", "Reclaimable memory", "Monthly savings"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q", want)
		}
	}
	if _, err := helmTemplate(t, "--set", "grafana.dashboard.colour=blue"); err == nil {
		t.Error("the schema accepts an unknown grafana.dashboard key")
	}
}
