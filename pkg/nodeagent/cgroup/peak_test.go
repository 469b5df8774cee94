package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
)

// fakeMemcg models the kernel's memory.peak (mm/memcontrol.c, Linux ≥ 6.12): a lifetime
// watermark, plus one watermark per open file that a write resets to the current usage.
// TestFakeMatchesRealKernel ties this model to what the real kernel did in the fixtures.
type fakeMemcg struct {
	current, lifetime uint64
	fds               []*fakePeakFD
}

func (m *fakeMemcg) use(b uint64) {
	m.current, m.lifetime = b, max(m.lifetime, b)
	for _, fd := range m.fds {
		fd.watermark = max(fd.watermark, b)
	}
}

func (m *fakeMemcg) open() *fakePeakFD {
	fd := &fakePeakFD{m: m}
	m.fds = append(m.fds, fd)
	return fd
}

type fakePeakFD struct {
	m          *fakeMemcg
	watermark  uint64
	wasReset   bool
	failWrites bool
	closed     bool
}

func (f *fakePeakFD) ReadAt(p []byte, off int64) (int, error) {
	v := f.m.lifetime
	if f.wasReset {
		v = f.watermark
	}
	s := []byte(strconv.FormatUint(v, 10) + "\n")
	if off >= int64(len(s)) {
		return 0, fmt.Errorf("EOF at %d", off)
	}
	n := copy(p, s[off:])
	return n, nil
}

func (f *fakePeakFD) WriteAt(p []byte, _ int64) (int, error) {
	if f.failWrites || len(p) == 0 {
		return 0, syscall.EINVAL
	}
	f.wasReset, f.watermark = true, f.m.current
	return len(p), nil
}

func (f *fakePeakFD) Close() error { f.closed = true; return nil }

// TestFakeMatchesRealKernel: scenario2's capture log (appended to its cpu.pressure) shows
// the real 6.12 kernel's per-fd reset: the fd read the lifetime peak, after the write the
// same fd read memory.current, and a fresh open still read the lifetime peak.
func TestFakeMatchesRealKernel(t *testing.T) {
	log := fixture(t, "2", s2Ctr+"/cpu.pressure")
	num := func(re string) uint64 {
		m := regexp.MustCompile(re + `:? (\d+)`).FindSubmatch(log)
		if m == nil {
			t.Fatalf("capture log has no %q", re)
		}
		v, _ := strconv.ParseUint(string(m[1]), 10, 64)
		return v
	}
	before, after, fresh, current := num(`\(fd\) before reset`), num(`\(same fd\) after reset`), num(`\(fresh open\) after reset`), num(`(?m)^memory\.current`)

	m := &fakeMemcg{}
	m.use(before)
	m.use(current)
	fd := m.open()
	if got := readFake(t, fd); got != before {
		t.Errorf("fd before reset: %d, kernel said %d", got, before)
	}
	fd.WriteAt(resetPayload, 0)
	if got := readFake(t, fd); got != after {
		t.Errorf("same fd after reset: %d, kernel said %d", got, after)
	}
	if got := readFake(t, m.open()); got != fresh {
		t.Errorf("fresh open after reset: %d, kernel said %d", got, fresh)
	}
}

func readFake(t *testing.T, f *fakePeakFD) uint64 {
	t.Helper()
	tr := &PeakTracker{f: f, name: "fake"}
	v, err := tr.read()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPeakPerFD(t *testing.T) {
	m := &fakeMemcg{}
	m.use(900) // before the tracker existed: must not leak into its first interval
	m.use(100)
	tr, err := newPeakTracker(m.open(), "memory.peak", true)
	if err != nil || tr.Mode() != PeakPerFD {
		t.Fatalf("mode %v, %v", tr.Mode(), err)
	}
	steps := []struct {
		use  []uint64
		want PeakReading
	}{
		{[]uint64{500, 200}, PeakReading{500, true}},
		{[]uint64{300}, PeakReading{300, true}},
		{nil, PeakReading{300, true}}, // nothing moved: the peak is the usage at the reset
		{[]uint64{50}, PeakReading{300, true}},
		{nil, PeakReading{50, true}},
	}
	for i, s := range steps {
		for _, u := range s.use {
			m.use(u)
		}
		got, err := tr.Take()
		if err != nil || got != s.want {
			t.Errorf("interval %d: got %+v, %v; want %+v", i, got, err, s.want)
		}
	}
	if m.lifetime != 900 {
		t.Errorf("resets changed the lifetime peak other readers see: %d", m.lifetime)
	}
}

func TestPeakPerFDDegradesWhenResetFails(t *testing.T) {
	m := &fakeMemcg{}
	m.use(100)
	fd := m.open()
	tr, err := newPeakTracker(fd, "memory.peak", true)
	if err != nil {
		t.Fatal(err)
	}
	m.use(400)
	fd.failWrites = true
	if got, err := tr.Take(); err != nil || got != (PeakReading{400, true}) || tr.Mode() != PeakRunningMax {
		t.Fatalf("got %+v, %v, mode %v", got, err, tr.Mode())
	}
	m.use(200)
	tr.Observe(200)
	if got, err := tr.Take(); err != nil || got != (PeakReading{200, false}) {
		t.Errorf("after degrading: got %+v, %v; want the sampled 200, not exact", got, err)
	}
	m.use(600)
	if got, err := tr.Take(); err != nil || got != (PeakReading{600, true}) {
		t.Errorf("after degrading, a new peak: got %+v, %v", got, err)
	}
}

func TestPeakRunningMax(t *testing.T) {
	m := &fakeMemcg{}
	m.use(500)
	fd := m.open()
	fd.failWrites = true // a kernel before 6.12
	tr, err := newPeakTracker(fd, "memory.peak", true)
	if err != nil || tr.Mode() != PeakRunningMax {
		t.Fatalf("mode %v, %v", tr.Mode(), err)
	}
	m.use(400)
	tr.Observe(400)
	tr.Observe(350)
	if got, err := tr.Take(); err != nil || got != (PeakReading{400, false}) {
		t.Errorf("no new lifetime peak: got %+v, %v; want sampled 400", got, err)
	}
	m.use(700)
	tr.Observe(650)
	if got, err := tr.Take(); err != nil || got != (PeakReading{700, true}) {
		t.Errorf("new lifetime peak: got %+v, %v; want exact 700", got, err)
	}
	if _, err := tr.Take(); !errors.Is(err, ErrNoPeak) {
		t.Errorf("nothing known: %v, want ErrNoPeak", err)
	}
}

// TestOpenPeakOnFixtures: files that are not on cgroup2 are never written to (a fixture
// copy is a regular file), and a missing memory.peak degrades to sampling.
func TestOpenPeakOnFixtures(t *testing.T) {
	dir := copyTree(t, scenario("1"))
	r := openReader(t, dir, Options{})
	loc, err := r.LocateContainer(s1UID, Burstable, s1ID)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(r.Abs(loc.MemoryDir), "memory.peak")
	before, _ := os.ReadFile(file)
	tr, err := r.OpenPeak(loc)
	if err != nil || tr.Mode() != PeakRunningMax {
		t.Fatalf("mode %v, %v", tr.Mode(), err)
	}
	if err := os.WriteFile(file, []byte("67200000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := tr.Take(); err != nil || got != (PeakReading{67200000, true}) {
		t.Errorf("got %+v, %v", got, err)
	}
	tr.Close()
	if after, _ := os.ReadFile(file); !bytes.Equal(after, []byte("67200000\n")) {
		t.Errorf("tracker wrote to a regular file: %q (was %q)", after, before)
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	tr, err = r.OpenPeak(loc)
	if err != nil || tr.Mode() != PeakSampled {
		t.Fatalf("without memory.peak: mode %v, %v", tr.Mode(), err)
	}
	if _, err := tr.Take(); !errors.Is(err, ErrNoPeak) {
		t.Errorf("no samples: %v", err)
	}
	tr.Observe(10)
	tr.Observe(30)
	tr.Observe(20)
	if got, err := tr.Take(); err != nil || got != (PeakReading{30, false}) {
		t.Errorf("sampled: %+v, %v", got, err)
	}

	v1 := openReader(t, "testdata/cgroupv1-cgroupfs", Options{})
	loc, err = v1.LocateContainer(uidB, Burstable, "containerd://"+idB)
	if err != nil {
		t.Fatal(err)
	}
	tr, err = v1.OpenPeak(loc)
	if err != nil || tr.Mode() != PeakRunningMax {
		t.Fatalf("v1: mode %v, %v", tr.Mode(), err)
	}
	tr.Close()
}
