package policy

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestParseIntOrPercent(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    IntOrPercent
		wantErr string
	}{
		"whole number":        {in: "2", want: IntOrPercent{Value: 2}},
		"percentage":          {in: "10%", want: IntOrPercent{Value: 10, Percent: true}},
		"hundred percent":     {in: "100%", want: IntOrPercent{Value: 100, Percent: true}},
		"zero":                {in: "0", wantErr: "between 1"},
		"zero percent":        {in: "0%", wantErr: "between 1"},
		"over 100%":           {in: "150%", wantErr: "≤ 100%"},
		"negative":            {in: "-1", wantErr: "not a whole number"},
		"fraction":            {in: "2.5", wantErr: "not a whole number"},
		"fraction percentage": {in: "2.5%", wantErr: "not a whole number"},
		"blank":               {in: "", wantErr: "empty"},
		"only percent":        {in: "%", wantErr: "empty"},
		"huge":                {in: "99999999999", wantErr: "between 1"},
		"word":                {in: "ten", wantErr: "not a whole number"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseIntOrPercent(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestIntOrPercentOf(t *testing.T) {
	cases := map[string]struct {
		c     IntOrPercent
		total int
		want  int
	}{
		"10% of 30 pods":          {IntOrPercent{Value: 10, Percent: true}, 30, 3},
		"10% of 5 pods is 1":      {IntOrPercent{Value: 10, Percent: true}, 5, 1},
		"10% of 0 pods is 1":      {IntOrPercent{Value: 10, Percent: true}, 0, 1},
		"25% of 10 rounds down":   {IntOrPercent{Value: 25, Percent: true}, 10, 2},
		"whole number is as is":   {IntOrPercent{Value: 3}, 100, 3},
		"whole number above size": {IntOrPercent{Value: 3}, 1, 3},
	}
	for name, tc := range cases {
		if got := tc.c.Of(tc.total); got != tc.want {
			t.Errorf("%s: Of(%d) = %d, want %d", name, tc.total, got, tc.want)
		}
	}
}

func TestParseConcurrency(t *testing.T) {
	cases := map[string]struct {
		in      *ballastv1.MaxConcurrentResizes
		want    Resize
		wantErr string
	}{
		"unset takes 10%, no node cap": {want: Resize{PerWorkload: IntOrPercent{Value: 10, Percent: true}}},
		"both written": {in: &ballastv1.MaxConcurrentResizes{PerWorkload: "2", PerNode: ptr.To[int32](3)},
			want: Resize{PerWorkload: IntOrPercent{Value: 2}, PerNode: 3}},
		"bad perWorkload": {in: &ballastv1.MaxConcurrentResizes{PerWorkload: "lots"},
			wantErr: `behaviors.resize.maxConcurrentResizes.perWorkload "lots": not a whole number`},
		"zero perNode": {in: &ballastv1.MaxConcurrentResizes{PerNode: ptr.To[int32](0)},
			wantErr: "perNode 0: must be ≥ 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got Resize
			verr := parseConcurrency(tc.in, &got)
			if tc.wantErr != "" {
				if verr == nil || !strings.Contains(verr.Error(), tc.wantErr) || verr.Reason != ReasonInvalidConcurrency {
					t.Fatalf("err = %v, want %s containing %q", verr, ReasonInvalidConcurrency, tc.wantErr)
				}
				return
			}
			if verr != nil || got.PerWorkload != tc.want.PerWorkload || got.PerNode != tc.want.PerNode {
				t.Fatalf("got %+v %+v, %v; want %+v %+v", got.PerWorkload, got.PerNode, verr, tc.want.PerWorkload, tc.want.PerNode)
			}
		})
	}
}

// FuzzParseIntOrPercent: any string either fails or yields a cap in range whose
// rendering parses back to itself, and Of never returns less than 1.
func FuzzParseIntOrPercent(f *testing.F) {
	for _, s := range []string{"10%", "1", "100%", "0", "-3", "2.5%", "", "%", "999999999999", " 7 ", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseIntOrPercent(s)
		if err != nil {
			return
		}
		if c.Value < 1 || (c.Percent && c.Value > 100) || c.Value > maxConcurrencyValue {
			t.Fatalf("%q parsed out of range: %+v", s, c)
		}
		back, err := ParseIntOrPercent(c.String())
		if err != nil || back != c {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, c, c.String(), back, err)
		}
		for _, n := range []int{0, 1, 7, 1000} {
			if c.Of(n) < 1 {
				t.Fatalf("%+v.Of(%d) = %d", c, n, c.Of(n))
			}
		}
	})
}

// TestValidateResizeBudget: the cooldown and the concurrency caps through Validate, with
// the reason and message a policy author sees.
func TestValidateResizeBudget(t *testing.T) {
	cases := map[string]struct {
		edit       func(*ballastv1.ResourcePolicySpec)
		wantReason string
		wantMsg    string
	}{
		"blank is valid": {edit: func(*ballastv1.ResourcePolicySpec) {}, wantReason: ReasonValid},
		"cooldown 30m":   {edit: func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.Resize.Cooldown = "30m" }, wantReason: ReasonValid},
		"cooldown 0s": {edit: func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.Resize.Cooldown = "0s" },
			wantReason: ReasonInvalidDuration, wantMsg: `behaviors.resize.cooldown "0s": must be a Go duration > 0`},
		"cooldown words": {edit: func(s *ballastv1.ResourcePolicySpec) { s.Behaviors.Resize.Cooldown = "an hour" },
			wantReason: ReasonInvalidDuration, wantMsg: `behaviors.resize.cooldown "an hour"`},
		"perWorkload 200%": {edit: func(s *ballastv1.ResourcePolicySpec) {
			s.Behaviors.Resize.MaxConcurrentResizes = &ballastv1.MaxConcurrentResizes{PerWorkload: "200%"}
		}, wantReason: ReasonInvalidConcurrency, wantMsg: `perWorkload "200%": a percentage must be ≤ 100%`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, reason, msg := Validate(ballastv1.KindClusterResourcePolicy, withSpec(tc.edit), Floors{})
			if reason != tc.wantReason || !strings.Contains(msg, tc.wantMsg) {
				t.Fatalf("Validate = %s %q; want %s containing %q", reason, msg, tc.wantReason, tc.wantMsg)
			}
		})
	}
}
