package cgroup

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// safeRelPath: clean, relative, and no ".." component.
func safeRelPath(p string) bool {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." {
			return false
		}
	}
	return true
}

func TestParseContainerID(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    ContainerID
		wantErr bool
	}{
		"containerd":          {in: "containerd://" + idB, want: ContainerID{"containerd", idB}},
		"cri-o":               {in: "cri-o://" + idE, want: ContainerID{"cri-o", idE}},
		"bare id":             {in: idG, want: ContainerID{"", idG}},
		"empty":               {in: "", wantErr: true},
		"runtime only":        {in: "containerd://", wantErr: true},
		"traversal":           {in: "containerd://../../../etc", wantErr: true},
		"slash in id":         {in: "containerd://a/b", wantErr: true},
		"dot":                 {in: "containerd://.", wantErr: true},
		"bad runtime":         {in: "c/d://" + idB, wantErr: true},
		"too long":            {in: strings.Repeat("a", 129), wantErr: true},
		"non-ascii in the id": {in: "containerd://ä", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseContainerID(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadIdentifier) {
					t.Fatalf("got %+v, %v; want ErrBadIdentifier", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestPodDir(t *testing.T) {
	const uid = "3f8a1e2c-5b6d-4e7f-9a0b-1c2d3e4f5a6b"
	cases := map[string]struct {
		d    Driver
		qos  QOSClass
		want string
	}{
		"systemd guaranteed":  {DriverSystemd, Guaranteed, "kubepods.slice/kubepods-pod3f8a1e2c_5b6d_4e7f_9a0b_1c2d3e4f5a6b.slice"},
		"systemd burstable":   {DriverSystemd, Burstable, s1Pod},
		"systemd besteffort":  {DriverSystemd, BestEffort, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod3f8a1e2c_5b6d_4e7f_9a0b_1c2d3e4f5a6b.slice"},
		"cgroupfs guaranteed": {DriverCgroupfs, Guaranteed, "kubepods/pod" + uid},
		"cgroupfs burstable":  {DriverCgroupfs, Burstable, "kubepods/burstable/pod" + uid},
		"cgroupfs besteffort": {DriverCgroupfs, BestEffort, "kubepods/besteffort/pod" + uid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PodDir(tc.d, uid, tc.qos)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	bad := map[string]struct {
		d   Driver
		uid string
		qos QOSClass
	}{
		"unknown qos":    {DriverSystemd, uid, "Premium"},
		"lowercase qos":  {DriverSystemd, uid, "burstable"},
		"unknown driver": {"docker", uid, Burstable},
		"auto driver":    {DriverAuto, uid, Burstable},
		"uid traversal":  {DriverCgroupfs, "../x", Burstable},
		"empty uid":      {DriverCgroupfs, "", Burstable},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			if got, err := PodDir(tc.d, tc.uid, tc.qos); !errors.Is(err, ErrBadIdentifier) {
				t.Errorf("got %q, %v; want ErrBadIdentifier", got, err)
			}
		})
	}
}

func TestContainerDirCandidates(t *testing.T) {
	const id = "abc123"
	cases := map[string]struct {
		d       Driver
		runtime string
		want    []string
	}{
		"systemd containerd":  {DriverSystemd, "containerd", []string{"P/cri-containerd-abc123.scope"}},
		"systemd cri-o":       {DriverSystemd, "cri-o", []string{"P/crio-abc123.scope"}},
		"systemd docker":      {DriverSystemd, "docker", []string{"P/docker-abc123.scope"}},
		"systemd unknown":     {DriverSystemd, "", []string{"P/cri-containerd-abc123.scope", "P/crio-abc123.scope", "P/docker-abc123.scope"}},
		"cgroupfs containerd": {DriverCgroupfs, "containerd", []string{"P/abc123"}},
		"cgroupfs cri-o":      {DriverCgroupfs, "cri-o", []string{"P/crio-abc123", "P/abc123"}},
		"cgroupfs unknown":    {DriverCgroupfs, "", []string{"P/abc123", "P/crio-abc123"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod, _ := PodDir(tc.d, uidB, Burstable)
			got, err := ContainerDirCandidates(tc.d, uidB, Burstable, ContainerID{Runtime: tc.runtime, ID: id})
			if err != nil {
				t.Fatal(err)
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = strings.Replace(w, "P", pod, 1)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
	if _, err := ContainerDirCandidates(DriverSystemd, uidB, Burstable, ContainerID{ID: "../x"}); !errors.Is(err, ErrBadIdentifier) {
		t.Errorf("unvalidated ContainerID accepted: %v", err)
	}
}
