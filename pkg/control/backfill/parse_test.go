package backfill

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRange(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []Series
		skipped int
		garbage bool
		api     bool
	}{
		"matrix": {
			in: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"namespace":"a","pod":"p","container":"app"},"values":[[1700000000,"0.25"],[1700000060.5,"1e3"]]}]}}`,
			want: []Series{{Labels: map[string]string{"namespace": "a", "pod": "p", "container": "app"},
				Points: []Point{{1700000000000, 0.25}, {1700000060500, 1000}}}},
		},
		"bad points are skipped": {
			in:      `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"NaN"],[2,"+Inf"],[3,"-1"],[4,"x"],[5],["a","1"],[6,7],[8,"2"]]}]}}`,
			want:    []Series{{Labels: map[string]string{}, Points: []Point{{8000, 2}}}},
			skipped: 7,
		},
		"empty result":   {in: `{"status":"success","data":{"resultType":"matrix","result":[]}}`, want: []Series{}},
		"error answer":   {in: `{"status":"error","errorType":"bad_data","error":"parse error"}`, api: true},
		"vector":         {in: `{"status":"success","data":{"resultType":"vector","result":[]}}`, garbage: true},
		"no data":        {in: `{"status":"success"}`, garbage: true},
		"html":           {in: `<html>502 Bad Gateway</html>`, garbage: true},
		"truncated":      {in: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{}`, garbage: true},
		"unknown status": {in: `{"status":"partial"}`, garbage: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, skipped, err := ParseRange(strings.NewReader(tc.in))
			var api *APIError
			switch {
			case tc.garbage:
				if !errors.Is(err, ErrGarbage) {
					t.Fatalf("err = %v, want ErrGarbage", err)
				}
				return
			case tc.api:
				if !errors.As(err, &api) || api.Type != "bad_data" {
					t.Fatalf("err = %v, want an APIError", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("series (-want +got):\n%s", diff)
			}
			if skipped != tc.skipped {
				t.Errorf("skipped = %d, want %d", skipped, tc.skipped)
			}
		})
	}
}

// FuzzParseRange: any input either parses into finite, non-negative points or is an error;
// it never panics.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"p"},"values":[[1700000000,"0.25"]]}]}}`,
		`{"status":"error","errorType":"timeout","error":"query timed out"}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"NaN"],[2e20,"1"],[-1,"1"]]}]}}`,
		`{"status":"success","data":null}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := ParseRange(strings.NewReader(string(b)))
		if err != nil {
			if got != nil {
				t.Fatalf("series %v with error %v", got, err)
			}
			return
		}
		for _, s := range got {
			for _, p := range s.Points {
				if !(p.Value >= 0) || math.IsInf(p.Value, 0) || p.UnixMilli < 0 {
					t.Fatalf("point %+v escaped the checks", p)
				}
			}
		}
	})
}
