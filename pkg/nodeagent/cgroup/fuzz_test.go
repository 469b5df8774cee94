package cgroup

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
)

// Every parser is fuzzed with the real-kernel fixture files as seeds. Beyond "never
// panics", each target checks an invariant of a successful parse, that failures wrap one
// of the package's sentinels, and that the allocation-free fast paths the reader uses
// (scanFlatKeyed, parseDecimal, parsePSIFast) agree with the general parsers.

func checkParseErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMissingKey) {
		t.Fatalf("error %v wraps neither ErrMalformed nor ErrMissingKey", err)
	}
}

func FuzzParseSingleValue(f *testing.F) {
	for _, base := range []string{"memory.current", "memory.peak", "memory.max", "pids.peak",
		"cpuacct.usage", "memory.usage_in_bytes", "memory.limit_in_bytes", "memory.max_usage_in_bytes"} {
		for _, b := range fixtureFiles(f, base) {
			f.Add(b)
		}
	}
	f.Add([]byte("9223372036854771712\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseSingleValue(data)
		checkParseErr(t, err)
		// The fast path agrees with the general parser.
		if w, werr := parseSingleValue(data); w != v || fmt.Sprint(werr) != fmt.Sprint(err) {
			t.Fatalf("ParseSingleValue %d, %v; parseSingleValue %d, %v", v, err, w, werr)
		}
		if err == nil {
			// A successful parse round-trips.
			if w, err := ParseSingleValue([]byte(strconv.FormatUint(v, 10) + "\n")); err != nil || w != v {
				t.Fatalf("%d does not round-trip: %d, %v", v, w, err)
			}
		}
		m, err := ParseMemoryMax(data)
		checkParseErr(t, err)
		if err == nil && m != Unlimited && m != v {
			t.Fatalf("memory.max %d disagrees with single value %d", m, v)
		}
		l, err := ParseV1Limit(data)
		checkParseErr(t, err)
		if err == nil && l != Unlimited && l >= v1UnlimitedFloor {
			t.Fatalf("v1 limit %d above the unlimited floor", l)
		}
	})
}

func FuzzParseCPUStat(f *testing.F) {
	for _, b := range fixtureFiles(f, "cpu.stat") {
		f.Add(b)
	}
	f.Add([]byte("usage_usec 1\nusage_usec 2\n"))
	f.Add([]byte("usage_usec\u00a01\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseCPUStat(data)
		checkParseErr(t, err)
		if err == nil {
			if kv, err := ParseFlatKeyed(data); err != nil || kv["usage_usec"] != s.UsageUsec {
				t.Fatalf("usage_usec %d disagrees with flat parse %v, %v", s.UsageUsec, kv, err)
			}
		}
		checkScanFlatKeyed(t, data, cpuStatKeys)
	})
}

// checkScanFlatKeyed: scanFlatKeyed finds what ParseFlatKeyed finds, and fails with its error.
func checkScanFlatKeyed(t *testing.T, data []byte, keys []string) {
	t.Helper()
	vals := make([]uint64, len(keys))
	found, err := scanFlatKeyed(data, keys, vals)
	kv, kvErr := ParseFlatKeyed(data)
	if fmt.Sprint(err) != fmt.Sprint(kvErr) {
		t.Fatalf("scanFlatKeyed error %v, ParseFlatKeyed error %v", err, kvErr)
	}
	if err != nil {
		return
	}
	for i, k := range keys {
		v, ok := kv[k]
		if ok != (found&(1<<i) != 0) || (ok && v != vals[i]) {
			t.Fatalf("%s: scanFlatKeyed %d (found %v), ParseFlatKeyed %d (found %v)", k, vals[i], found&(1<<i) != 0, v, ok)
		}
	}
}

func FuzzParseMemoryStat(f *testing.F) {
	for _, b := range fixtureFiles(f, "memory.stat") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseMemoryStat(data)
		checkParseErr(t, err)
		if err == nil && s.Keys["inactive_file"] != s.InactiveFileBytes {
			t.Fatalf("inactive_file %d not in keys %v", s.InactiveFileBytes, s.Keys)
		}
		// What the reader uses instead agrees, value and error.
		if v, ierr := ParseMemoryStatInactiveFile(data); v != s.InactiveFileBytes || fmt.Sprint(ierr) != fmt.Sprint(err) {
			t.Fatalf("ParseMemoryStatInactiveFile %d, %v; ParseMemoryStat %d, %v", v, ierr, s.InactiveFileBytes, err)
		}
		v1, err := ParseMemoryStatV1(data)
		checkParseErr(t, err)
		if err == nil && v1.Keys["total_inactive_file"] != v1.TotalInactiveFileBytes {
			t.Fatalf("total_inactive_file %d not in keys", v1.TotalInactiveFileBytes)
		}
		if v, ierr := ParseMemoryStatV1InactiveFile(data); v != v1.TotalInactiveFileBytes || fmt.Sprint(ierr) != fmt.Sprint(err) {
			t.Fatalf("ParseMemoryStatV1InactiveFile %d, %v; ParseMemoryStatV1 %d, %v", v, ierr, v1.TotalInactiveFileBytes, err)
		}
		checkScanFlatKeyed(t, data, []string{"inactive_file", "total_inactive_file", "anon", "pgfault"})
	})
}

func FuzzParseMemoryEvents(f *testing.F) {
	for _, base := range []string{"memory.events", "memory.events.local"} {
		for _, b := range fixtureFiles(f, base) {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseMemoryEvents(data)
		checkParseErr(t, err)
		checkScanFlatKeyed(t, data, memoryEventsKeys)
	})
}

func FuzzParseOOMControl(f *testing.F) {
	for _, b := range fixtureFiles(f, "memory.oom_control") {
		f.Add(b)
	}
	f.Add([]byte("oom_kill_disable 1\nunder_oom 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseOOMControl(data)
		checkParseErr(t, err)
		if err == nil && !c.HasOOMKill && c.OOMKill != 0 {
			t.Fatalf("oom_kill %d without HasOOMKill", c.OOMKill)
		}
		checkScanFlatKeyed(t, data, oomControlKeys)
	})
}

func FuzzParsePSI(f *testing.F) {
	for _, base := range []string{"cpu.pressure", "memory.pressure", "io.pressure"} {
		for _, b := range fixtureFiles(f, base) {
			f.Add(b)
		}
	}
	f.Add([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=1 total=2\n"))
	f.Add([]byte("some avg10=1e1 avg60=0x1p-2 avg300=+0 total=007\nfull avg10=0 avg60=0 avg300=0 total=0 x=1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePSI(data)
		checkParseErr(t, err)
		// The fast path agrees with the general parser.
		if q, qerr := parsePSI(data); q != p || fmt.Sprint(qerr) != fmt.Sprint(err) {
			t.Fatalf("ParsePSI %+v, %v; parsePSI %+v, %v", p, err, q, qerr)
		}
		if err != nil {
			return
		}
		for _, l := range []PSILine{p.Some, p.Full} {
			for _, v := range []float64{l.Avg10, l.Avg60, l.Avg300} {
				if math.IsNaN(v) || v < 0 || v > 100 {
					t.Fatalf("average %v outside 0–100", v)
				}
			}
		}
	})
}

func FuzzParseContainerID(f *testing.F) {
	f.Add(s1ID)
	f.Add("cri-o://" + idE)
	f.Add("docker://../../etc")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseContainerID(s)
		if err != nil {
			if !errors.Is(err, ErrBadIdentifier) {
				t.Fatalf("error %v does not wrap ErrBadIdentifier", err)
			}
			return
		}
		for _, d := range []Driver{DriverSystemd, DriverCgroupfs} {
			dirs, err := ContainerDirCandidates(d, uidB, Burstable, id)
			if err != nil {
				t.Fatalf("accepted ID %+v rejected by layout: %v", id, err)
			}
			for _, dir := range dirs {
				if !safeRelPath(dir) {
					t.Fatalf("unsafe path %q from %q", dir, s)
				}
			}
		}
	})
}

// FuzzParseRoot: whatever a kubelet cgroupRoot says, an accepted root only ever yields
// paths inside the hierarchy, and a rejected one wraps ErrBadIdentifier.
func FuzzParseRoot(f *testing.F) {
	for _, s := range []string{"/", "/custom", "/a.slice/a-b.slice", "/../etc", "x.slice", "/a//b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		root, err := ParseRoot(s)
		if err != nil {
			if !errors.Is(err, ErrBadIdentifier) {
				t.Fatalf("error %v does not wrap ErrBadIdentifier", err)
			}
			return
		}
		for _, d := range []Driver{DriverSystemd, DriverCgroupfs} {
			dir, err := PodDirIn(root, d, uidB, Burstable)
			if err != nil {
				t.Fatalf("accepted root %q rejected by layout: %v", root, err)
			}
			if !safeRelPath(dir) {
				t.Fatalf("unsafe path %q from %q", dir, s)
			}
		}
	})
}
