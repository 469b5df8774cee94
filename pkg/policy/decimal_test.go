package policy

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParseDecimal(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    string // exact value as a big.Rat string; "" means an error
		wantStr string
	}{
		"integer":                       {"15", "15", "15"},
		"fraction":                      {"1.2", "6/5", "1.2"},
		"trailing zeros kept in String": {"1.20", "6/5", "1.20"},
		"leading point":                 {".5", "1/2", "0.5"},
		"trailing point":                {"5.", "5", "5.0"},
		"explicit plus":                 {"+1.5", "3/2", "1.5"},
		"negative":                      {"-0.25", "-1/4", "-0.25"},
		"zero":                          {"0", "0", "0"},
		"many digits stay exact":        {"1.000000000000000000001", "1000000000000000000001/1000000000000000000000", "1.000000000000000000001"},
		"empty":                         {"", "", ""},
		"sign only":                     {"-", "", ""},
		"point only":                    {".", "", ""},
		"double sign":                   {"--1", "", ""},
		"exponent":                      {"1e3", "", ""},
		"fraction form":                 {"6/5", "", ""},
		"hex":                           {"0x10", "", ""},
		"underscore":                    {"1_000", "", ""},
		"space":                         {" 1", "", ""},
		"quantity suffix":               {"1Mi", "", ""},
		"two points":                    {"1.2.3", "", ""},
		"percent sign":                  {"15%", "", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := ParseDecimal(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ParseDecimal(%q) = %s, want an error", tc.in, d)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDecimal(%q): %v", tc.in, err)
			}
			if got := d.Rat().RatString(); got != tc.want {
				t.Errorf("value = %s, want %s", got, tc.want)
			}
			if d.String() != tc.wantStr {
				t.Errorf("String = %q, want %q", d.String(), tc.wantStr)
			}
		})
	}
}

func TestParsePercentage(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    int64
		wantErr bool
	}{
		"with percent sign":     {in: "15%", want: 15},
		"without percent sign":  {in: "15", want: 15},
		"zero parses":           {in: "0%", want: 0},
		"percent sign alone":    {in: "%", wantErr: true},
		"double percent sign":   {in: "15%%", wantErr: true},
		"space before the sign": {in: "15 %", wantErr: true},
		"words":                 {in: "ten", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := ParsePercentage(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParsePercentage(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && d.CmpInt64(tc.want) != 0 {
				t.Errorf("ParsePercentage(%q) = %s, want %d", tc.in, d, tc.want)
			}
		})
	}
}

func TestDecimalMulTrunc(t *testing.T) {
	const mi = 1 << 20
	cases := map[string]struct {
		headroom string
		x, want  int64
	}{
		// SPEC §5.1 / §5.2 worked examples: exact, never one byte short.
		"memory p99 240Mi × 1.2 is 288Mi exactly":  {"1.2", 240 * mi, 288 * mi},
		"ephemeral 1800Mi × 1.2 is 2160Mi exactly": {"1.2", 1800 * mi, 2160 * mi},
		"cpu mean 240m × 1.25 is 300m":             {"1.25", 240, 300},
		"headroom 1.0 is the identity":             {"1.0", 192 * mi, 192 * mi},
		"truncates toward zero":                    {"1.25", 3, 3},
		"negative truncates toward zero":           {"1.5", -3, -4},
		"overflow saturates":                       {"2", math.MaxInt64, math.MaxInt64},
		"negative overflow saturates":              {"2", math.MinInt64, math.MinInt64},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := ParseDecimal(tc.headroom)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.MulTrunc(tc.x); got != tc.want {
				t.Errorf("%d × %s = %d, want %d", tc.x, tc.headroom, got, tc.want)
			}
		})
	}
}

func TestParsePositiveDuration(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		"hours":    {in: "24h", want: 24 * time.Hour},
		"compound": {in: "1h30m", want: 90 * time.Minute},
		"zero":     {in: "0s", wantErr: true},
		"negative": {in: "-1m", wantErr: true},
		"no unit":  {in: "15", wantErr: true},
		"blank":    {in: "", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePositiveDuration(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParsePositiveDuration(%q) = %v, %v; want %v, wantErr %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// decimalGrammar is the accepted syntax, stated independently of the parser.
func decimalGrammar(s string) bool {
	if len(s) > MaxDecimalLen {
		return false
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		return false
	}
	digits, points := 0, 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.':
			points++
		default:
			return false
		}
	}
	return digits > 0 && points <= 1
}

func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"1.2", "0", "-0.5", ".5", "5.", "+1", "1e3", "6/5", "0x1", "", ".", "1.2.3", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDecimal(s)
		if (err == nil) != decimalGrammar(s) {
			t.Fatalf("ParseDecimal(%q) error = %v, grammar says valid = %v", s, err, decimalGrammar(s))
		}
		if err != nil {
			return
		}
		// big.Rat agrees on every string of the grammar except the bare trailing point.
		want, ok := new(big.Rat).SetString(strings.TrimSuffix(s, "."))
		if !ok || want.Cmp(d.Rat()) != 0 {
			t.Fatalf("ParseDecimal(%q) = %s, big.Rat says %v", s, d.Rat().RatString(), want)
		}
		// String round-trips exactly.
		back, err := ParseDecimal(d.String())
		if err != nil || back.Cmp(d) != 0 {
			t.Fatalf("String %q of %q does not round-trip: %v", d.String(), s, err)
		}
	})
}

func FuzzParsePercentage(f *testing.F) {
	for _, s := range []string{"15%", "15", "0%", "%", "15%%", "100.5%", "-1%", "1e2%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, perr := ParsePercentage(s)
		d, derr := ParseDecimal(strings.TrimSuffix(s, "%"))
		if (perr == nil) != (derr == nil) {
			t.Fatalf("ParsePercentage(%q) error %v, decimal error %v", s, perr, derr)
		}
		if perr == nil && p.Cmp(d) != 0 {
			t.Fatalf("ParsePercentage(%q) = %s, want %s", s, p, d)
		}
	})
}
