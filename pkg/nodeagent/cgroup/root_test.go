package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRoot(t *testing.T) {
	cases := map[string]Root{
		"":                                nil,
		"/":                               nil,
		"//":                              nil,
		"/custom":                         {"custom"},
		"/ballast-tier-node-b":            {"ballast-tier-node-b"},
		"custom/nested/":                  {"custom", "nested"},
		"/custom.d":                       {"custom.d"},
		"/custom.slice":                   {"custom"},
		"custom.slice":                    {"custom"},
		"/a.slice/a-b.slice":              {"a", "b"},
		"/tier_node_b.slice":              {"tier-node-b"},
		"/a.slice/a-b.slice/a-b-c.slice/": {"a", "b", "c"},
	}
	for in, want := range cases {
		got, err := ParseRoot(in)
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("ParseRoot(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"/..", "/a/../b", "/./x", "/a b", "/x.slice/y.slice", "/a.slice/b-c.slice", "/a-b.slice", "/ä",
		"/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17"} {
		if got, err := ParseRoot(in); !errors.Is(err, ErrBadIdentifier) {
			t.Errorf("ParseRoot(%q) = %q, %v; want ErrBadIdentifier", in, got, err)
		}
	}
}

// TestPodDirIn: the kubelet's names for pods below a cgroupRoot, per driver (cgroupfs
// nests the names; systemd prefixes every slice with the whole chain, '-' escaped to '_').
func TestPodDirIn(t *testing.T) {
	const uid = "3f8a1e2c-5b6d-4e7f-9a0b-1c2d3e4f5a6b"
	const uidU = "3f8a1e2c_5b6d_4e7f_9a0b_1c2d3e4f5a6b"
	cases := map[string]struct {
		root Root
		d    Driver
		qos  QOSClass
		want string
	}{
		"no root cgroupfs":            {nil, DriverCgroupfs, Burstable, "kubepods/burstable/pod" + uid},
		"cgroupfs guaranteed":         {Root{"custom"}, DriverCgroupfs, Guaranteed, "custom/kubepods/pod" + uid},
		"cgroupfs burstable":          {Root{"ballast-tier-node-b"}, DriverCgroupfs, Burstable, "ballast-tier-node-b/kubepods/burstable/pod" + uid},
		"cgroupfs nested besteffort":  {Root{"a", "b"}, DriverCgroupfs, BestEffort, "a/b/kubepods/besteffort/pod" + uid},
		"systemd guaranteed":          {Root{"custom"}, DriverSystemd, Guaranteed, "custom.slice/custom-kubepods.slice/custom-kubepods-pod" + uidU + ".slice"},
		"systemd burstable dash root": {Root{"tier-b"}, DriverSystemd, Burstable, "tier_b.slice/tier_b-kubepods.slice/tier_b-kubepods-burstable.slice/tier_b-kubepods-burstable-pod" + uidU + ".slice"},
		"systemd nested besteffort":   {Root{"a", "b"}, DriverSystemd, BestEffort, "a.slice/a-b.slice/a-b-kubepods.slice/a-b-kubepods-besteffort.slice/a-b-kubepods-besteffort-pod" + uidU + ".slice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PodDirIn(tc.root, tc.d, uid, tc.qos)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
			if !safeRelPath(got) {
				t.Errorf("unsafe path %q", got)
			}
			kp, err := KubepodsDir(tc.root, tc.d)
			if err != nil || filepath.Dir(filepath.Dir(got)) != kp && filepath.Dir(got) != kp {
				t.Errorf("KubepodsDir = %q, %v; not a parent of %q", kp, err, got)
			}
		})
	}
	for _, bad := range []Root{{".."}, {"a/b"}, {""}} {
		if got, err := PodDirIn(bad, DriverCgroupfs, uid, Burstable); !errors.Is(err, ErrBadIdentifier) {
			t.Errorf("root %q: got %q, %v; want ErrBadIdentifier", bad, got, err)
		}
	}
	got, err := ContainerDirCandidatesIn(Root{"custom"}, DriverCgroupfs, uid, Burstable, ContainerID{Runtime: "containerd", ID: "abc"})
	if err != nil || !cmp.Equal(got, []string{"custom/kubepods/burstable/pod" + uid + "/abc"}) {
		t.Errorf("ContainerDirCandidatesIn = %q, %v", got, err)
	}
}

// mkdirs creates dirs (slash-separated, relative) below base.
func mkdirs(t *testing.T, base string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(base, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLocateUnderRoot: a Reader with a kubelet root finds pods and containers below it on
// v2 (systemd) and v1 (cgroupfs), and CheckRoot reports a root with no kubepods clearly.
func TestLocateUnderRoot(t *testing.T) {
	const uid = "3f8a1e2c-5b6d-4e7f-9a0b-1c2d3e4f5a6b"
	t.Run("v2 systemd", func(t *testing.T) {
		dir := t.TempDir()
		pod, _ := PodDirIn(Root{"custom"}, DriverSystemd, uid, Burstable)
		mkdirs(t, dir, pod+"/cri-containerd-abc.scope")
		if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := openReader(t, dir, Options{Root: Root{"custom"}})
		if err := r.CheckRoot(); err != nil {
			t.Fatal(err)
		}
		if got, err := r.LocatePod(uid, Burstable); err != nil || got != v2loc(DriverSystemd, pod) {
			t.Errorf("LocatePod = %+v, %v", got, err)
		}
		if got, err := r.LocateContainer(uid, Burstable, "containerd://abc"); err != nil || got != v2loc(DriverSystemd, pod+"/cri-containerd-abc.scope") {
			t.Errorf("LocateContainer = %+v, %v", got, err)
		}
		// Without the root the same pod is not found, and the check says why.
		top := openReader(t, dir, Options{})
		if _, err := top.LocatePod(uid, Burstable); !errors.Is(err, ErrNotFound) {
			t.Errorf("no root: %v, want ErrNotFound", err)
		}
		if err := top.CheckRoot(); !errors.Is(err, ErrNotFound) {
			t.Errorf("CheckRoot without root: %v, want ErrNotFound", err)
		} else {
			t.Log(err)
		}
	})
	t.Run("v1 cgroupfs", func(t *testing.T) {
		dir := t.TempDir()
		pod, _ := PodDirIn(Root{"ballast-tier-node-b"}, DriverCgroupfs, uid, BestEffort)
		mkdirs(t, dir, "memory/"+pod+"/abc", "cpu,cpuacct/"+pod+"/abc")
		r := openReader(t, dir, Options{Root: Root{"ballast-tier-node-b"}})
		if err := r.CheckRoot(); err != nil {
			t.Fatal(err)
		}
		want := Location{V1, DriverCgroupfs, "cpu,cpuacct/" + pod, "memory/" + pod}
		if got, err := r.LocatePod(uid, BestEffort); err != nil || got != want {
			t.Errorf("LocatePod = %+v, %v; want %+v", got, err, want)
		}
		wrong := openReader(t, dir, Options{Root: Root{"elsewhere"}, Driver: DriverCgroupfs})
		if err := wrong.CheckRoot(); !errors.Is(err, ErrNotFound) {
			t.Errorf("CheckRoot with a wrong root: %v, want ErrNotFound", err)
		}
	})
}
