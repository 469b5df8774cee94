package crd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubectlApplyRejectsMalformedValues: decimals, percentages and durations the schema
// can check are refused by `kubectl apply` itself, with a message naming the field.
func TestKubectlApplyRejectsMalformedValues(t *testing.T) {
	cx := ctx(t)
	policy := func(name, metric, readiness, behaviors string) string {
		return fmt.Sprintf(`apiVersion: ballast.tightlinesoftware.com/v1
kind: ClusterResourcePolicy
metadata:
  name: %s
spec:
  metrics:
  - {resource: cpu, field: request, source: kubernetes-metrics, aggregation: avg%s}
  readiness: {%s}
  behaviors: {%s}
`, name, metric, readiness, behaviors)
	}
	apply := func(t *testing.T, manifest string) (string, error) {
		path := filepath.Join(t.TempDir(), "p.yaml")
		if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		return srv.Kube.Kubectl(cx, "apply", "-f", path)
	}
	good := policy(uniq("guards-ok"), ", headroom: \"1.25\"", `minTimeSpan: 24h, maxCV: "1.5"`,
		`thresholds: {default: "10%", resize: {resourceThresholds: {memory: {request: "15"}}}}, resize: {maxChangePerCycle: "50%", interval: 15m}`)
	if out, err := apply(t, good); err != nil {
		t.Fatalf("a well-formed policy is refused: %v\n%s", err, out)
	}
	for name, tc := range map[string]struct{ manifest, message string }{
		"headroom abc":    {policy(uniq("guards"), `, headroom: "abc"`, "", ""), "headroom must be a decimal such as 1.25"},
		"maxCV 1 comma 5": {policy(uniq("guards"), "", `maxCV: "1,5"`, ""), "maxCV must be a decimal such as 1.5"},
		"minTimeSpan 1 day": {policy(uniq("guards"), "", `minTimeSpan: "1 day"`, ""),
			"minTimeSpan must be a Go duration such as 24h or 90m"},
		"threshold ten percent": {policy(uniq("guards"), "", "", `thresholds: {default: "ten%"}`),
			"a threshold must be a percentage such as 10% or 10"},
		"resize interval 15 minutes": {policy(uniq("guards"), "", "", `resize: {interval: "15 minutes"}`),
			"interval must be a Go duration such as 15m"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := apply(t, tc.manifest)
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("kubectl apply = %v\n%s\nwant a refusal saying %q", err, out, tc.message)
			}
		})
	}
}
