package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestOpenDetectsVersion(t *testing.T) {
	cases := map[string]struct {
		dir     string
		want    Version
		wantCPU string
	}{
		"real kernel tree (kubepods.slice only)": {scenario("1"), V2, ""},
		"v2 with cgroup.controllers":             {"testdata/cgroupfs-v2", V2, ""},
		"v1 with cpu,cpuacct":                    {"testdata/cgroupv1-cgroupfs", V1, "cpu,cpuacct"},
		"v1 with separate cpuacct":               {"testdata/cgroupv1-systemd", V1, "cpuacct"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := openReader(t, tc.dir, Options{})
			if r.Version() != tc.want || r.cpuCtl != tc.wantCPU {
				t.Errorf("version %v, cpu controller %q; want %v, %q", r.Version(), r.cpuCtl, tc.want, tc.wantCPU)
			}
		})
	}
	if _, err := Open(t.TempDir(), Options{}); err == nil {
		t.Error("an empty directory was accepted as a cgroup root")
	}
	if _, err := Open("testdata/does-not-exist", Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing root: %v, want ErrNotExist", err)
	}
}

func TestLocateContainer(t *testing.T) {
	cases := map[string]struct {
		root  string
		opts  Options
		uid   string
		qos   QOSClass
		id    string
		want  Location
		errIs error
	}{
		"real kernel, systemd burstable": {root: scenario("1"), uid: s1UID, qos: Burstable, id: s1ID,
			want: Location{V2, DriverSystemd, s1Ctr, s1Ctr}},
		"real kernel, unknown runtime tries every scope prefix": {root: scenario("3"), uid: "9c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f", qos: Burstable,
			id: "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", want: Location{V2, DriverSystemd, s3Ctr, s3Ctr}},
		"real kernel, wrong QoS class": {root: scenario("1"), uid: s1UID, qos: Guaranteed, id: s1ID, errIs: ErrNotFound},
		"real kernel, forced cgroupfs": {root: scenario("1"), opts: Options{Driver: DriverCgroupfs}, uid: s1UID, qos: Burstable, id: s1ID, errIs: ErrNotFound},
		"real kernel, traversal id":    {root: scenario("1"), uid: s1UID, qos: Burstable, id: "containerd://../..", errIs: ErrBadIdentifier},
		"cgroupfs v2 guaranteed": {root: "testdata/cgroupfs-v2", uid: uidG, qos: Guaranteed, id: "containerd://" + idG,
			want: v2loc(DriverCgroupfs, "kubepods/pod"+uidG+"/"+idG)},
		"cgroupfs v2 burstable": {root: "testdata/cgroupfs-v2", uid: uidB, qos: Burstable, id: "containerd://" + idB,
			want: v2loc(DriverCgroupfs, "kubepods/burstable/pod"+uidB+"/"+idB)},
		"cgroupfs v2 besteffort cri-o": {root: "testdata/cgroupfs-v2", uid: uidE, qos: BestEffort, id: "cri-o://" + idE,
			want: v2loc(DriverCgroupfs, "kubepods/besteffort/pod"+uidE+"/crio-"+idE)},
		"systemd v2 guaranteed": {root: "testdata/systemd-v2-qos", uid: uidG, qos: Guaranteed, id: "containerd://" + idG,
			want: v2loc(DriverSystemd, "kubepods.slice/kubepods-pod"+us(uidG)+".slice/cri-containerd-"+idG+".scope")},
		"systemd v2 besteffort cri-o": {root: "testdata/systemd-v2-qos", uid: uidE, qos: BestEffort, id: "cri-o://" + idE,
			want: v2loc(DriverSystemd, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"+us(uidE)+".slice/crio-"+idE+".scope")},
		"v1 cgroupfs burstable": {root: "testdata/cgroupv1-cgroupfs", uid: uidB, qos: Burstable, id: "containerd://" + idB,
			want: Location{V1, DriverCgroupfs, "cpu,cpuacct/kubepods/burstable/pod" + uidB + "/" + idB, "memory/kubepods/burstable/pod" + uidB + "/" + idB}},
		"v1 cgroupfs guaranteed": {root: "testdata/cgroupv1-cgroupfs", uid: uidG, qos: Guaranteed, id: "containerd://" + idG,
			want: Location{V1, DriverCgroupfs, "cpu,cpuacct/kubepods/pod" + uidG + "/" + idG, "memory/kubepods/pod" + uidG + "/" + idG}},
		"v1 systemd besteffort": {root: "testdata/cgroupv1-systemd", uid: uidE, qos: BestEffort, id: "containerd://" + idE,
			want: Location{V1, DriverSystemd,
				"cpuacct/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us(uidE) + ".slice/cri-containerd-" + idE + ".scope",
				"memory/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us(uidE) + ".slice/cri-containerd-" + idE + ".scope"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := openReader(t, tc.root, tc.opts)
			got, err := r.LocateContainer(tc.uid, tc.qos, tc.id)
			if tc.errIs != nil {
				if !errors.Is(err, tc.errIs) {
					t.Fatalf("got %+v, %v; want %v", got, err, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func v2loc(d Driver, dir string) Location { return Location{V2, d, dir, dir} }
func us(uid string) string                { return strings.ReplaceAll(uid, "-", "_") }

func TestLocatePod(t *testing.T) {
	r := openReader(t, scenario("1"), Options{})
	got, err := r.LocatePod(s1UID, Burstable)
	if err != nil || got != v2loc(DriverSystemd, s1Pod) {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := r.LocatePod(s1UID, BestEffort); !errors.Is(err, ErrNotFound) {
		t.Errorf("wrong QoS: %v, want ErrNotFound", err)
	}
	v1 := openReader(t, "testdata/cgroupv1-cgroupfs", Options{})
	got, err = v1.LocatePod(uidB, Burstable)
	want := Location{V1, DriverCgroupfs, "cpu,cpuacct/kubepods/burstable/pod" + uidB, "memory/kubepods/burstable/pod" + uidB}
	if err != nil || got != want {
		t.Errorf("v1: got %+v, %v; want %+v", got, err, want)
	}
}

func TestReadSample(t *testing.T) {
	psi := &PSI{Some: PSILine{1.5, 0.75, 0.2, 123456}, Full: PSILine{0.5, 0.25, 0.05, 45678}, HasFull: true}
	cases := map[string]struct {
		root, uid, id string
		qos           QOSClass
		pod           bool
		want          Sample
		wantErrFiles  []string // files named in the error (parts that could not be read)
	}{
		"real kernel pod slice: memory only": {root: scenario("1"), uid: s1UID, qos: Burstable, pod: true,
			want: Sample{HasMemory: true, MemoryUsageBytes: 122880, WorkingSetBytes: 122880,
				HasMemoryLimit: true, MemoryLimitBytes: 128 << 20, HasOOMKills: true, OOMKills: 2},
			wantErrFiles: []string{"cpu.stat"}},
		"real kernel OOM-killed container": {root: scenario("1"), uid: s1UID, qos: Burstable, id: s1ID,
			want: Sample{HasCPU: true, CPU: CPUCounter{UsageNanos: 424773000},
				HasMemoryLimit: true, MemoryLimitBytes: 64 << 20, HasOOMKills: true, OOMKills: 2,
				CPUPressure:    &PSI{Some: PSILine{TotalUsec: 9728}, Full: PSILine{TotalUsec: 4674}, HasFull: true},
				MemoryPressure: &PSI{Some: PSILine{TotalUsec: 4386}, Full: PSILine{TotalUsec: 4350}, HasFull: true}},
			wantErrFiles: []string{"memory.stat"}},
		"cgroupfs v2 burstable": {root: "testdata/cgroupfs-v2", uid: uidB, qos: Burstable, id: "containerd://" + idB,
			want: Sample{HasCPU: true, CPU: CPUCounter{UsageNanos: 2500000000}, HasMemory: true, MemoryUsageBytes: 50 << 20,
				InactiveFileBytes: 10 << 20, WorkingSetBytes: 40 << 20, HasMemoryLimit: true, MemoryLimitBytes: Unlimited,
				HasOOMKills: true, CPUPressure: psi, MemoryPressure: psi}},
		"cgroupfs v2 besteffort: working set floors at 0": {root: "testdata/cgroupfs-v2", uid: uidE, qos: BestEffort, id: "cri-o://" + idE,
			want: Sample{HasCPU: true, CPU: CPUCounter{UsageNanos: 100000}, HasMemory: true, MemoryUsageBytes: 8192,
				InactiveFileBytes: 16384, HasMemoryLimit: true, MemoryLimitBytes: Unlimited, HasOOMKills: true,
				CPUPressure: psi, MemoryPressure: psi}},
		"v1 cgroupfs burstable": {root: "testdata/cgroupv1-cgroupfs", uid: uidB, qos: Burstable, id: "containerd://" + idB,
			want: Sample{HasCPU: true, CPU: CPUCounter{UsageNanos: 2500000123}, HasMemory: true, MemoryUsageBytes: 40 << 20,
				InactiveFileBytes: 8 << 20, WorkingSetBytes: 32 << 20, HasMemoryLimit: true, MemoryLimitBytes: 64 << 20,
				HasOOMKills: true, OOMKills: 1}},
		"v1 systemd besteffort: unlimited, floored": {root: "testdata/cgroupv1-systemd", uid: uidE, qos: BestEffort, id: "containerd://" + idE,
			want: Sample{HasCPU: true, CPU: CPUCounter{UsageNanos: 1234567}, HasMemory: true, MemoryUsageBytes: 4096,
				InactiveFileBytes: 8192, HasMemoryLimit: true, MemoryLimitBytes: Unlimited, HasOOMKills: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := openReader(t, tc.root, Options{})
			var loc Location
			var err error
			if tc.pod {
				loc, err = r.LocatePod(tc.uid, tc.qos)
			} else {
				loc, err = r.LocateContainer(tc.uid, tc.qos, tc.id)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.ReadSample(loc, t0)
			tc.want.Time, tc.want.CPU.Time = t0, t0
			if !tc.want.HasCPU {
				tc.want.CPU.Time = time.Time{}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
			if len(tc.wantErrFiles) == 0 && err != nil {
				t.Errorf("unexpected error: %v", err)
			}
			for _, f := range tc.wantErrFiles {
				if err == nil || !strings.Contains(err.Error(), f) || !errors.Is(err, os.ErrNotExist) {
					t.Errorf("error %v should name the missing %s", err, f)
				}
			}

			// The Collector's open directories read exactly the same, errors included.
			dirs, derr := r.openDirs(loc, new([]byte))
			if derr != nil {
				t.Fatal(derr)
			}
			defer dirs.Close()
			got2, err2 := r.readSample(dirs, loc, t0)
			if d := cmp.Diff(got, got2); d != "" {
				t.Errorf("through open directories (-ReadSample +open):\n%s", d)
			}
			if fmt.Sprint(err) != fmt.Sprint(err2) || errors.Is(err, os.ErrNotExist) != errors.Is(err2, os.ErrNotExist) {
				t.Errorf("through open directories: error %v, ReadSample %v", err2, err)
			}
			if dirs.stale {
				t.Error("open directories marked stale, but nothing was recreated")
			}
		})
	}
}

// TestReadSampleGoneCgroup: a container whose directory vanished reads nothing and says so.
func TestReadSampleGoneCgroup(t *testing.T) {
	dir := copyTree(t, "testdata/cgroupfs-v2")
	r := openReader(t, dir, Options{})
	loc, err := r.LocateContainer(uidB, Burstable, "containerd://"+idB)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(r.Abs(loc.MemoryDir)); err != nil {
		t.Fatal(err)
	}
	s, err := r.ReadSample(loc, t0)
	if s.HasCPU || s.HasMemory || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %+v, %v", s, err)
	}
}

// TestHostCgroupV1 reads the real root cgroup of this machine's v1 cpuacct and memory
// hierarchies (the CI host offers cgroup v1 for cpu and memory). It is skipped only where
// those files do not exist.
func TestHostCgroupV1(t *testing.T) {
	const host = "/sys/fs/cgroup"
	for _, f := range []string{"memory/memory.usage_in_bytes", "cpuacct/cpuacct.usage"} {
		if _, err := os.Stat(host + "/" + f); err != nil {
			t.Skipf("no host cgroup v1 file %s: %v", f, err)
		}
	}
	r := openReader(t, host, Options{})
	if r.Version() != V1 {
		t.Fatalf("host detected as %v, want v1", r.Version())
	}
	loc, err := r.Cgroup("/")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s, err := r.ReadSample(loc, now)
	if err != nil {
		t.Fatalf("reading the host root cgroup: %v (sample %+v)", err, s)
	}
	if !s.HasCPU || s.CPU.UsageNanos == 0 {
		t.Errorf("root cpuacct.usage: %+v, want a positive counter", s.CPU)
	}
	if !s.HasMemory || s.MemoryUsageBytes == 0 || s.WorkingSetBytes > s.MemoryUsageBytes {
		t.Errorf("root memory: usage %d, working set %d", s.MemoryUsageBytes, s.WorkingSetBytes)
	}
	// The counter is cumulative: a second read is never below the first.
	s2, err := r.ReadSample(loc, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MilliCPU(s.CPU, s2.CPU); err != nil {
		t.Errorf("rate between two host readings: %v", err)
	}
	p, err := r.OpenPeak(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Mode() != PeakRunningMax {
		t.Errorf("v1 peak mode %v, want running-max (a v1 reset would be global)", p.Mode())
	}
}

func TestIDIsTheDirectoryInode(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "kubepods", "pod1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, Options{Version: V2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fi, err := os.Stat(filepath.Join(dir, "kubepods", "pod1"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.ID("kubepods/pod1")
	if err != nil {
		t.Fatal(err)
	}
	if want := fi.Sys().(*syscall.Stat_t).Ino; id != want {
		t.Errorf("ID = %d, want inode %d", id, want)
	}
	if _, err := r.ID("cgroup.controllers"); err == nil {
		t.Error("ID of a file: want an error")
	}
	if _, err := r.ID("../outside"); err == nil {
		t.Error("ID outside the root: want an error")
	}
}
