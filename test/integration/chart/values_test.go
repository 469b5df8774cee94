package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestValuesDefaults: values.yaml carries every key of SPEC §13.1 with its default.
func TestValuesDefaults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"image.pullPolicy":                          "IfNotPresent",
		"image.tag":                                 "",
		"replicaCount":                              float64(2),
		"leaderElect":                               true,
		"statusRefreshInterval":                     "1m",
		"nameOverride":                              "",
		"fullnameOverride":                          "",
		"serviceAccount.name":                       "",
		"crds.upgradeHook.enabled":                  true,
		"resources.limits.cpu":                      "500m",
		"resources.limits.memory":                   "128Mi",
		"resources.limits.ephemeral-storage":        "256Mi",
		"resources.requests.cpu":                    "10m",
		"resources.requests.memory":                 "64Mi",
		"resources.requests.ephemeral-storage":      "64Mi",
		"tolerations":                               []any{},
		"agent.tolerations":                         []any{map[string]any{"operator": "Exists"}},
		"agent.nodeSelector":                        map[string]any{},
		"agent.priorityClassName":                   "",
		"webhook.failurePolicy":                     "Ignore",
		"webhook.timeoutSeconds":                    float64(5),
		"logging.level":                             "info",
		"logging.webhook":                           "",
		"logging.watcher":                           "",
		"logging.collector":                         "",
		"logging.adjuster":                          "",
		"logging.format":                            "json",
		"logging.stdout.enabled":                    true,
		"logging.stdout.additionalKeys":             map[string]any{},
		"dryRun":                                    "none",
		"hpa.scaleTarget":                           false,
		"ballastConfig.identityLabels":              []any{"app.kubernetes.io/name", "app.kubernetes.io/component"},
		"ballastConfig.orphanTTL":                   "168h",
		"ballastConfig.retentionWindow":             "168h",
		"ballastConfig.policyFloors":                map[string]any{"minResizeInterval": "1m", "minTimeSpan": "1h", "minThreshold": "1%"},
		"valkey.enabled":                            true,
		"valkey.deploymentStrategy":                 "Recreate",
		"valkey.tolerations":                        []any{},
		"valkey.resources":                          map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "96Mi"}, "limits": map[string]any{"memory": "96Mi"}},
		"valkey.valkeyConfig":                       "maxmemory 64mb\nmaxmemory-policy noeviction",
		"valkey.dataStorage.enabled":                true,
		"valkey.dataStorage.requestedSize":          "1Gi",
		"valkey.dataStorage.className":              "",
		"valkey.dataStorage.useClusterDefaultClass": true,
		"store.endpoint":                            "redis://localhost:6379",
		"certManager.enabled":                       "auto",
		"defaultMetricsSources.kubernetesMetrics":   map[string]any{"enabled": true, "name": "kubernetes-metrics", "pollInterval": "10s", "reservoirSize": float64(10000)},
		"defaultMetricsSources.kubeletSummary":      map[string]any{"enabled": true, "name": "kubelet-summary", "pollInterval": "30s", "reservoirSize": float64(10000)},
		"telemetry.prometheus": map[string]any{"enabled": false, "port": float64(8080), "secure": false,
			"serviceMonitor": map[string]any{"enabled": false, "interval": "30s", "scrapeTimeout": "10s", "labels": map[string]any{}}},
		"defaultClusterResourcePolicy.enabled":       true,
		"defaultClusterResourcePolicy.name":          "default",
		"defaultClusterResourcePolicy.priority":      float64(0),
		"defaultClusterResourcePolicy.metricsSource": "kubernetes-metrics",
	}
	for path, w := range want {
		got, ok := lookupPath(values, path)
		if !ok {
			t.Errorf("values.yaml lacks %s", path)
			continue
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
	if repo, _ := lookupPath(values, "image.repository"); repo == "" {
		t.Error("image.repository is empty")
	}
}

func lookupPath(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}
