package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestParseBoostCPU(t *testing.T) {
	type out struct {
		Factor string
		Milli  int64
		OK     bool
	}
	cases := map[string]struct {
		in   string
		want out
	}{
		"multiplier":                {"2x", out{Factor: "2", OK: true}},
		"fractional multiplier":     {"1.5x", out{Factor: "1.5", OK: true}},
		"largest multiplier":        {"10x", out{Factor: "10", OK: true}},
		"multiplier of one":         {"1x", out{}},
		"multiplier below one":      {"0.5x", out{}},
		"multiplier above ten":      {"10.01x", out{}},
		"negative multiplier":       {"-2x", out{}},
		"bare x":                    {"x", out{}},
		"exponent multiplier":       {"1e1x", out{}},
		"absolute cores":            {"2", out{Milli: 2000, OK: true}},
		"absolute millicores":       {"1500m", out{Milli: 1500, OK: true}},
		"absolute fraction rounds":  {"0.0005", out{Milli: 1, OK: true}},
		"zero":                      {"0", out{}},
		"negative quantity":         {"-1", out{}},
		"not a quantity":            {"lots", out{}},
		"blank":                     {"", out{}},
		"a million cores and more":  {"2M", out{}},
		"multiplier with a percent": {"200%", out{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, m, ok := ParseBoostCPU(tc.in)
			got := out{Milli: m, OK: ok}
			if f.Sign() != 0 {
				got.Factor = f.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseBoostCPU(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestCompileStartupBoost(t *testing.T) {
	cases := map[string]struct {
		boost      *ballastv1.StartupBoost
		wantBoost  string
		wantReady  time.Duration
		wantReason string
		wantMsg    string
	}{
		"absent":            {},
		"multiplier":        {boost: &ballastv1.StartupBoost{CPU: "2x", ReadyFor: "30s"}, wantBoost: "2x", wantReady: 30 * time.Second},
		"default readyFor":  {boost: &ballastv1.StartupBoost{CPU: "1500m"}, wantBoost: "1500m", wantReady: time.Minute},
		"bad cpu":           {boost: &ballastv1.StartupBoost{CPU: "11x"}, wantReason: ReasonInvalidBoost, wantMsg: `behaviors.startupBoost.cpu "11x": must be a multiplier`},
		"bad readyFor":      {boost: &ballastv1.StartupBoost{CPU: "2x", ReadyFor: "soon"}, wantReason: ReasonInvalidBoost, wantMsg: `behaviors.startupBoost.readyFor "soon": must be a Go duration > 0`},
		"zero readyFor":     {boost: &ballastv1.StartupBoost{CPU: "2x", ReadyFor: "0s"}, wantReason: ReasonInvalidBoost, wantMsg: `readyFor "0s"`},
		"negative readyFor": {boost: &ballastv1.StartupBoost{CPU: "2x", ReadyFor: "-1m"}, wantReason: ReasonInvalidBoost, wantMsg: `readyFor "-1m"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := withSpec(func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.StartupBoost = tc.boost })
			c, err := Compile(ballastv1.KindClusterResourcePolicy, "", "p", 1, spec, Floors{})
			if tc.wantReason != "" {
				verr, ok := err.(*ValidationError)
				if !ok || verr.Reason != tc.wantReason || !strings.Contains(verr.Message, tc.wantMsg) {
					t.Fatalf("Compile error = %v, want %s containing %q", err, tc.wantReason, tc.wantMsg)
				}
				ok2, reason, _ := Validate(ballastv1.KindClusterResourcePolicy, spec, Floors{})
				if ok2 || reason != tc.wantReason {
					t.Errorf("Validate = %v, %s; want false, %s", ok2, reason, tc.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if tc.wantBoost == "" {
				if c.StartupBoost != nil {
					t.Fatalf("StartupBoost = %+v, want nil", c.StartupBoost)
				}
				return
			}
			if c.StartupBoost == nil {
				t.Fatal("StartupBoost is nil")
			}
			if got := c.StartupBoost.String(); got != tc.wantBoost {
				t.Errorf("boost = %s, want %s", got, tc.wantBoost)
			}
			if c.StartupBoost.ReadyFor != tc.wantReady {
				t.Errorf("readyFor = %s, want %s", c.StartupBoost.ReadyFor, tc.wantReady)
			}
			if tc.boost.ReadyFor == "" && spec.Behaviors.StartupBoost.ReadyFor != "" {
				t.Error("Compile wrote the default into the caller's spec")
			}
		})
	}
}

// FuzzParseBoostCPU: any string either fails or yields exactly one of a multiplier in
// (1, MaxBoostFactor] and a positive millicore count, and never panics.
func FuzzParseBoostCPU(f *testing.F) {
	for _, s := range []string{"2x", "1.5x", "10x", "1x", "2", "1500m", "0", "-1", "", "x", "1e3", "2Mx", "0.0001", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		factor, milli, ok := ParseBoostCPU(s)
		if !ok {
			if factor.Sign() != 0 || milli != 0 {
				t.Fatalf("%q: failed but returned %s, %d", s, factor, milli)
			}
			return
		}
		isFactor := factor.Sign() != 0
		if isFactor == (milli != 0) {
			t.Fatalf("%q: factor %s and milli %d: want exactly one", s, factor, milli)
		}
		if isFactor && (factor.CmpInt64(1) <= 0 || factor.CmpInt64(MaxBoostFactor) > 0) {
			t.Fatalf("%q: factor %s out of (1, %d]", s, factor, MaxBoostFactor)
		}
		if !isFactor && (milli <= 0 || milli > 1_000_000_000) {
			t.Fatalf("%q: milli %d out of range", s, milli)
		}
	})
}
