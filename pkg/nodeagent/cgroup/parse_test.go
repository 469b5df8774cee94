package cgroup

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseRealKernelFiles(t *testing.T) {
	t.Run("cpu.stat with throttling", func(t *testing.T) {
		got, err := ParseCPUStat(fixture(t, "2", s2Ctr+"/cpu.stat"))
		if err != nil {
			t.Fatal(err)
		}
		want := CPUStat{UsageUsec: 1092180, UserUsec: 695546, SystemUsec: 396634, NrPeriods: 382, NrThrottled: 27, ThrottledUsec: 2307834}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got)\n%s", d)
		}
	})
	t.Run("memory.stat of the pod slice", func(t *testing.T) {
		got, err := ParseMemoryStat(fixture(t, "1", s1Pod+"/memory.stat"))
		if err != nil {
			t.Fatal(err)
		}
		if got.InactiveFileBytes != 0 || got.AnonBytes != 0 || got.FileBytes != 0 {
			t.Errorf("inactive_file/anon/file = %d/%d/%d, want 0/0/0", got.InactiveFileBytes, got.AnonBytes, got.FileBytes)
		}
		// Every key is kept, including ones this code never names. (The fixture README says
		// 61 keys; the captured file has 60 lines.)
		if len(got.Keys) != 60 || got.Keys["pgfault"] != 15849 || got.Keys["percpu"] != 12224 {
			t.Errorf("keys: %d, pgfault %d, percpu %d; want 60, 15849, 12224", len(got.Keys), got.Keys["pgfault"], got.Keys["percpu"])
		}
	})
	t.Run("memory.events of an OOM-killed container", func(t *testing.T) {
		got, err := ParseMemoryEvents(fixture(t, "1", s1Ctr+"/memory.events"))
		if err != nil {
			t.Fatal(err)
		}
		want := MemoryEvents{Max: 36, OOM: 1, OOMKill: 2, OOMGroupKill: 1}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got)\n%s", d)
		}
	})
	t.Run("memory.events.local of a pod whose own limit was hit", func(t *testing.T) {
		got, err := ParseMemoryEvents(fixture(t, "3", s3Pod+"/memory.events.local"))
		if err != nil {
			t.Fatal(err)
		}
		if want := (MemoryEvents{Max: 37, OOM: 1}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
	t.Run("memory.pressure under heavy throttling", func(t *testing.T) {
		got, err := ParsePSI(fixture(t, "2", s2Ctr+"/memory.pressure"))
		if err != nil {
			t.Fatal(err)
		}
		want := PSI{
			Some:    PSILine{Avg10: 76.84, Avg60: 40.00, Avg300: 10.45, TotalUsec: 32647481},
			Full:    PSILine{Avg10: 76.58, Avg60: 39.83, Avg300: 10.40, TotalUsec: 32483717},
			HasFull: true,
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got)\n%s", d)
		}
	})
	t.Run("cpu.pressure with capture-log lines appended", func(t *testing.T) {
		got, err := ParsePSI(fixture(t, "2", s2Ctr+"/cpu.pressure"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Some.Avg10 != 5.85 || got.Full.TotalUsec != 2024438 {
			t.Errorf("got %+v", got)
		}
	})
	single := map[string]struct {
		scen, rel string
		parse     func([]byte) (uint64, error)
		want      uint64
	}{
		"memory.current":        {"1", s1Ctr + "/memory.current", ParseSingleValue, 131072},
		"memory.peak":           {"1", s1Ctr + "/memory.peak", ParseSingleValue, 67112960},
		"memory.max (bytes)":    {"1", s1Ctr + "/memory.max", ParseMemoryMax, 64 << 20},
		"memory.max (max)":      {"3", s3Ctr + "/memory.max", ParseMemoryMax, Unlimited},
		"pod memory.max":        {"3", s3Pod + "/memory.max", ParseMemoryMax, 48 << 20},
		"memory.high via max":   {"2", s2Ctr + "/memory.high", ParseMemoryMax, 24 << 20},
		"swap max is unlimited": {"1", s1Ctr + "/memory.swap.max", ParseMemoryMax, Unlimited},
	}
	for name, tc := range single {
		t.Run(name, func(t *testing.T) {
			got, err := tc.parse(fixture(t, tc.scen, tc.rel))
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestParseV1(t *testing.T) {
	stat := []byte("cache 13139968\nrss 9199616\ninactive_file 241664\ntotal_cache 4171354112\ntotal_rss 1032376320\n" +
		"total_shmem 9084928\ntotal_inactive_file 2028916736\ntotal_active_file 2142437376\n")
	got, err := ParseMemoryStatV1(stat)
	if err != nil {
		t.Fatal(err)
	}
	want := MemoryStatV1{TotalInactiveFileBytes: 2028916736, TotalActiveFileBytes: 2142437376, TotalRSSBytes: 1032376320,
		TotalCacheBytes: 4171354112, TotalShmemBytes: 9084928}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(MemoryStatV1{}, "Keys")); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if got.Keys["inactive_file"] != 241664 {
		t.Errorf("non-hierarchical key lost: %v", got.Keys)
	}

	oc := map[string]struct {
		in   string
		want OOMControl
	}{
		"kernel ≥ 4.13": {"oom_kill_disable 0\nunder_oom 1\noom_kill 3\n", OOMControl{UnderOOM: true, OOMKill: 3, HasOOMKill: true}},
		"older kernel":  {"oom_kill_disable 1\nunder_oom 0\n", OOMControl{OOMKillDisable: true}},
	}
	for name, tc := range oc {
		t.Run(name, func(t *testing.T) {
			got, err := ParseOOMControl([]byte(tc.in))
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	limits := map[string]struct {
		in   string
		want uint64
	}{
		"no limit, 4 KiB pages":  {"9223372036854771712\n", Unlimited},
		"no limit, 64 KiB pages": {"9223372036854710272\n", Unlimited},
		"64 MiB":                 {"67108864\n", 64 << 20},
	}
	for name, tc := range limits {
		t.Run(name, func(t *testing.T) {
			if got, err := ParseV1Limit([]byte(tc.in)); err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	cases := map[string]struct {
		parse func([]byte) error
		in    string
		want  error
	}{
		"empty single value":        {single(ParseSingleValue), "", ErrMalformed},
		"negative single value":     {single(ParseSingleValue), "-1\n", ErrMalformed},
		"two values":                {single(ParseSingleValue), "1 2\n", ErrMalformed},
		"overflowing value":         {single(ParseSingleValue), "18446744073709551616\n", ErrMalformed},
		"memory.max word":           {single(ParseMemoryMax), "unlimited\n", ErrMalformed},
		"cpu.stat without usage":    {drop(ParseCPUStat), "user_usec 1\n", ErrMissingKey},
		"cpu.stat bad value":        {drop(ParseCPUStat), "usage_usec 12x\n", ErrMalformed},
		"flat line with three":      {drop(ParseCPUStat), "usage_usec 1 2\n", ErrMalformed},
		"repeated key":              {drop(ParseCPUStat), "usage_usec 1\nusage_usec 2\n", ErrMalformed},
		"memory.stat no inactive":   {drop(ParseMemoryStat), "anon 1\nfile 2\n", ErrMissingKey},
		"truncated memory.events":   {drop(ParseMemoryEvents), "low 0\nhigh 0\nmax 0\n", ErrMissingKey},
		"empty memory.events":       {drop(ParseMemoryEvents), "", ErrMissingKey},
		"v1 stat without total":     {drop(ParseMemoryStatV1), "inactive_file 5\n", ErrMissingKey},
		"oom_control without keys":  {drop(ParseOOMControl), "oom_kill 1\n", ErrMissingKey},
		"psi without some":          {drop(ParsePSI), "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", ErrMissingKey},
		"psi missing total":         {drop(ParsePSI), "some avg10=0.00 avg60=0.00 avg300=0.00\n", ErrMissingKey},
		"psi NaN":                   {drop(ParsePSI), "some avg10=NaN avg60=0.00 avg300=0.00 total=0\n", ErrMalformed},
		"psi above 100 percent":     {drop(ParsePSI), "some avg10=100.01 avg60=0.00 avg300=0.00 total=0\n", ErrMalformed},
		"psi negative total":        {drop(ParsePSI), "some avg10=1.00 avg60=0.00 avg300=0.00 total=-5\n", ErrMalformed},
		"psi field without equals":  {drop(ParsePSI), "some avg10 avg60=0.00 avg300=0.00 total=0\n", ErrMalformed},
		"psi repeated some":         {drop(ParsePSI), "some avg10=0 avg60=0 avg300=0 total=0\nsome avg10=0 avg60=0 avg300=0 total=0\n", ErrMalformed},
		"psi repeated field":        {drop(ParsePSI), "some avg10=0 avg10=0 avg60=0 avg300=0 total=0\n", ErrMalformed},
		"binary garbage flat keyed": {drop(ParseMemoryStat), "\x00\xff\x01 \x02\n", ErrMalformed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.parse([]byte(tc.in)); !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func single(f func([]byte) (uint64, error)) func([]byte) error {
	return func(b []byte) error { _, err := f(b); return err }
}

func drop[T any](f func([]byte) (T, error)) func([]byte) error {
	return func(b []byte) error { _, err := f(b); return err }
}

// TestParseFlatKeyedTolerates: blank lines, no trailing newline, keys in any order and
// unknown keys are all fine.
func TestParseFlatKeyedTolerates(t *testing.T) {
	got, err := ParseMemoryEvents([]byte("\noom_kill 4\nnew_counter 9\n\noom 2"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (MemoryEvents{OOM: 2, OOMKill: 4}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	p, err := ParsePSI([]byte("some total=5 avg300=0.01 avg60=0.02 avg10=0.03 future=1"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (PSI{Some: PSILine{Avg10: 0.03, Avg60: 0.02, Avg300: 0.01, TotalUsec: 5}}); p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
}

// TestScanFlatKeyed: the allocation-free scan the reader uses finds what ParseFlatKeyed
// finds, and fails as it does, on the inputs where its own scan gives up too.
func TestScanFlatKeyed(t *testing.T) {
	var many strings.Builder
	for i := range 200 {
		fmt.Fprintf(&many, "key%d %d\n", i, i)
	}
	many.WriteString("inactive_file 7\n")
	cases := map[string]struct {
		in        string
		want      uint64 // inactive_file
		wantFound bool
		errIs     error
	}{
		"kernel file":                   {in: string(fixture(t, "1", s1Pod+"/memory.stat")), want: 0, wantFound: true},
		"tabs, CR, blank lines, no EOL": {in: "\n\tanon 1\r\n\ninactive_file\t 007 ", want: 7, wantFound: true},
		"largest value":                 {in: "inactive_file 18446744073709551615\n", want: 18446744073709551615, wantFound: true},
		"absent":                        {in: "anon 1\n"},
		"empty":                         {in: ""},
		"no-break space (Unicode)":      {in: "inactive_file\u00a05\n", want: 5, wantFound: true},
		"more keys than the scan holds": {in: many.String(), want: 7, wantFound: true},
		"repeated other key":            {in: "anon 1\ninactive_file 2\nanon 3\n", errIs: ErrMalformed},
		"overflow":                      {in: "inactive_file 18446744073709551616\n", errIs: ErrMalformed},
		"sign":                          {in: "inactive_file +5\n", errIs: ErrMalformed},
		"key alone":                     {in: "inactive_file\n", errIs: ErrMalformed},
		"three fields":                  {in: "inactive_file 5 kB\n", errIs: ErrMalformed},
		"non-ASCII key":                 {in: "inäctive_file 5\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data := []byte(tc.in)
			checkScanFlatKeyed(t, data, []string{"inactive_file", "anon"})
			var v [1]uint64
			found, err := scanFlatKeyed(data, inactiveFileKey[:], v[:])
			if !errors.Is(err, tc.errIs) || (err == nil && (v[0] != tc.want || (found == 1) != tc.wantFound)) {
				t.Errorf("got %d (found %d), %v; want %d (found %v), %v", v[0], found, err, tc.want, tc.wantFound, tc.errIs)
			}
		})
	}
}

// TestParsersDoNotAllocate: the parsers a sampling cycle runs allocate nothing on what the
// kernel writes (docs/benchmarks.md, "ballast-node").
func TestParsersDoNotAllocate(t *testing.T) {
	files := []struct {
		scen, rel string
		parse     func([]byte) error
	}{
		{"1", s1Pod + "/memory.stat", drop(ParseMemoryStatInactiveFile)},
		{"1", s1Ctr + "/memory.max", drop(ParseMemoryMax)},
		{"2", s2Ctr + "/cpu.stat", drop(ParseCPUStat)},
		{"2", s2Ctr + "/memory.current", drop(ParseSingleValue)},
		{"2", s2Ctr + "/memory.events", drop(ParseMemoryEvents)},
		{"2", s2Ctr + "/cpu.pressure", drop(ParsePSI)},
		{"2", s2Ctr + "/memory.pressure", drop(ParsePSI)},
	}
	for _, f := range files {
		data, file, parse := fixture(t, f.scen, f.rel), path.Base(f.rel), f.parse
		if err := parse(data); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = parse(data) }); n != 0 {
			t.Errorf("%s: %v allocations per parse, want 0", file, n)
		}
	}
}
