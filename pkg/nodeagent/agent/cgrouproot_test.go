package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ballastk8s/ballast/pkg/nodeagent/cgroup"
	"github.com/ballastk8s/ballast/pkg/nodeagent/kubelet"
)

// fakeConfigz is a fake kubelet /configz reader (the real client is tested against a TLS
// server in pkg/nodeagent/kubelet).
type fakeConfigz struct {
	cc    kubelet.CgroupConfig
	err   error
	calls int
}

func (f *fakeConfigz) CgroupConfig(context.Context) (kubelet.CgroupConfig, error) {
	f.calls++
	return f.cc, f.err
}

func TestResolveKubeletRoot(t *testing.T) {
	ok := &fakeConfigz{cc: kubelet.CgroupConfig{CgroupRoot: "/ballast-tier-node-b", CgroupDriver: "cgroupfs"}}
	cases := map[string]struct {
		flag       string
		kc         cgroupConfigReader
		want       cgroup.Root
		from       string
		detailHas  string
		wantCalled bool
	}{
		"flag wins over the kubelet":  {"/custom", ok, cgroup.Root{"custom"}, rootFromFlag, "", false},
		"flag systemd form":           {"/a.slice/a-b.slice", nil, cgroup.Root{"a", "b"}, rootFromFlag, "", false},
		"detected from configz":       {"", ok, cgroup.Root{"ballast-tier-node-b"}, rootFromKubelet, "", true},
		"kubelet default root":        {"", &fakeConfigz{cc: kubelet.CgroupConfig{CgroupRoot: "/"}}, nil, rootFromKubelet, "", true},
		"no kubelet url":              {"", nil, nil, rootDefault, "no --kubelet-url", false},
		"configz forbidden":           {"", &fakeConfigz{err: kubelet.ErrForbidden}, nil, rootDefault, "403", true},
		"configz root not acceptable": {"", &fakeConfigz{cc: kubelet.CgroupConfig{CgroupRoot: "/../etc"}}, nil, rootDefault, "invalid cgroup identifier", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := resolveKubeletRoot(context.Background(), tc.flag, tc.kc)
			if err != nil {
				t.Fatal(err)
			}
			if got.root.String() != tc.want.String() || got.from != tc.from || !strings.Contains(got.detail, tc.detailHas) || (tc.detailHas == "") != (got.detail == "") {
				t.Errorf("got %+v; want root %s from %s, detail containing %q", got, tc.want, tc.from, tc.detailHas)
			}
			if f, isFake := tc.kc.(*fakeConfigz); isFake && tc.wantCalled && f.calls == 0 {
				t.Error("configz not read")
			}
		})
	}
	if _, err := resolveKubeletRoot(context.Background(), "/..", ok); !errors.Is(err, cgroup.ErrBadIdentifier) {
		t.Errorf("bad flag: %v, want ErrBadIdentifier", err)
	}
}
