package plugin

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

var (
	setupOnce sync.Once
	fix       fixture
)

func views(t testing.TB) (string, fixture) {
	t.Helper()
	setupOnce.Do(func() { fix = setup(t, srv.Kube.Client) })
	return srv.Kube.Kubeconfig, fix
}

func TestProfiles(t *testing.T) {
	kc, _ := views(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"profiles", []string{"profiles"}},
		{"profiles-wide", []string{"profiles", "-o", "wide"}},
		{"profiles-shop-by-cpu-saving", []string{"profiles", "-n", "shop", "--sort-by", "cpu-saving"}},
		{"profiles-billing", []string{"profiles", "-n", "billing"}},
		{"profiles-json", []string{"profiles", "-o", "json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, kc, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			golden(t, tc.name, r.stdout)
		})
	}
	r := run(t, kc, "profiles", "-o", "json")
	var rep struct {
		Profiles []struct{ Name string }
		Total    struct {
			CPUCoresSaving float64 `json:"cpuCoresSaving"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Profiles) != 3 {
		t.Fatalf("-o json is not the report: %v (%d profiles)", err, len(rep.Profiles))
	}
}

func TestExplain(t *testing.T) {
	kc, _ := views(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"explain-web-pod", []string{"explain", "-n", "shop", "web-5d8f7c9b6-ax7q"}},
		{"explain-web-deploy", []string{"explain", "-n", "shop", "deploy/web"}},
		{"explain-cache-pod", []string{"explain", "-n", "shop", "pod/cache-5d8f7c9b6-ax7q"}},
		{"explain-api-pod", []string{"explain", "-n", "shop", "api-5d8f7c9b6-ax7q"}},
		{"explain-standalone-measure", []string{"explain", "-n", "billing", "web-standalone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, kc, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			golden(t, tc.name, r.stdout)
		})
	}
	r := run(t, kc, "explain", "-n", "shop", "deploy/cache", "-o", "json")
	var ex struct {
		Policy    struct{ Winner string }
		Admission struct{ StepDown bool }
	}
	if err := json.Unmarshal([]byte(r.stdout), &ex); err != nil {
		t.Fatal(err, r.stdout)
	}
	if ex.Policy.Winner != "ResourcePolicy shop/shop-fast" || !ex.Admission.StepDown {
		t.Errorf("explain -o json: winner %q stepDown %v", ex.Policy.Winner, ex.Admission.StepDown)
	}
	t.Run("an HPA on cpu utilization shows the behaviors.hpa guard", func(t *testing.T) { explainHPA(t, kc) })
}

func TestUsageErrors(t *testing.T) {
	kc, _ := views(t)
	for _, args := range [][]string{
		{"profiles", "-o", "xml"},
		{"profiles", "--sort-by", "colour"},
		{"explain", "-n", "shop", "cronjob/x"},
		{"explain", "-n", "shop", "nope"},
		{"explain"},
		{"profiles", "--no-such-flag"},
	} {
		r := run(t, kc, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "error") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 with an error", args, r.code, r.stderr)
		}
	}
}
