package chart

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestRenderStatusRefresh: the default (1m, the binary's) passes no flag; another interval,
// or 0 (every change written), is passed as --status-refresh-interval; an unparseable one
// fails rendering.
func TestRenderStatusRefresh(t *testing.T) {
	cases := map[string]struct {
		set  []string
		want string // "" = no --status-refresh-interval at all
	}{
		"default": {},
		"30s":     {set: []string{"--set", "statusRefreshInterval=30s"}, want: "--status-refresh-interval=30s"},
		"0":       {set: []string{"--set", "statusRefreshInterval=0"}, want: "--status-refresh-interval=0"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := newHelm(t).mustTemplate(t, c.set...)
			d := &appsv1.Deployment{}
			m.decode(t, "Deployment", fullname, d)
			args := d.Spec.Template.Spec.Containers[0].Args
			i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--status-refresh-interval") })
			switch {
			case c.want == "" && i >= 0:
				t.Errorf("args %v hold %s, want the binary's default", args, args[i])
			case c.want != "" && (i < 0 || args[i] != c.want):
				t.Errorf("args %v lack %s", args, c.want)
			}
		})
	}
	if _, err := newHelm(t).template(t, "--set", "statusRefreshInterval=soon"); err == nil {
		t.Error("an unparseable statusRefreshInterval rendered")
	}
}
