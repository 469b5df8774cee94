package ballast

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct{ in, kind, name string }{
		{"web-1", "Pod", "web-1"},
		{"pod/web-1", "Pod", "web-1"},
		{"po/web-1", "Pod", "web-1"},
		{"deploy/web", "Deployment", "web"},
		{"Deployment.apps/web", "Deployment", "web"},
		{"sts/db", "StatefulSet", "db"},
		{"daemonsets/agent", "DaemonSet", "agent"},
	} {
		kind, name, err := parseTarget(tc.in)
		if err != nil || kind != tc.kind || name != tc.name {
			t.Errorf("parseTarget(%q) = %q, %q, %v; want %q, %q", tc.in, kind, name, err, tc.kind, tc.name)
		}
	}
	for _, bad := range []string{"", "deploy/", "cronjob/x", "deploy/a/b", "/x"} {
		if _, _, err := parseTarget(bad); err == nil {
			t.Errorf("parseTarget(%q) accepted", bad)
		}
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"web", "pod/web", "deploy/web", "sts/", "a/b/c", "DS/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kind, name, err := parseTarget(s)
		if err != nil {
			return
		}
		if name == "" || strings.Contains(name, "/") {
			t.Fatalf("parseTarget(%q) = %q, %q: an empty or multi-part name accepted", s, kind, name)
		}
		if _, ok := map[string]bool{"Pod": true, "Deployment": true, "StatefulSet": true, "DaemonSet": true}[kind]; !ok {
			t.Fatalf("parseTarget(%q): kind %q", s, kind)
		}
	})
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		res  string
		in   string
		want int64
		ok   bool
	}{
		{"cpu", "230m", 230, true},
		{"cpu", "1", 1000, true},
		{"memory", "176.00Mi", 176 << 20, true},
		{"memory", "1.50Gi", 3 << 29, true},
		{"memory", "", 0, false},
		{"memory", "lots", 0, false},
	} {
		got, ok := parseStat(corev1Resource(tc.res), tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseStat(%s, %q) = %d, %v; want %d, %v", tc.res, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	for _, s := range []string{"230m", "176.00Mi", "1e3", "-1", "9999999999999999999Ei"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parseStat("cpu", s) // must not panic on any status value
		parseStat("memory", s)
	})
}

func corev1Resource(s string) corev1.ResourceName { return corev1.ResourceName(s) }
