package sizing

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

func TestParseRecommendations(t *testing.T) {
	containers := []v1.ContainerProfile{
		{Name: "app", Recommendations: map[string]v1.Recommendation{
			"cpu":               {Request: "288m"},
			"memory":            {Request: "192Mi", Limit: "288Mi"},
			"ephemeral-storage": {Request: "lots", Limit: "2160Mi"},
		}},
		{Name: "proxy", Recommendations: map[string]v1.Recommendation{
			"cpu":            {Request: "-5m", Limit: "0"},
			"nvidia.com/gpu": {Request: "1"},
		}},
		{Name: "idle", Recommendations: map[string]v1.Recommendation{"cpu": {}}},
		{Name: "huge", Recommendations: map[string]v1.Recommendation{"memory": {Request: "9Ei"}, "cpu": {Request: "0"}}},
	}
	recs, problems := ParseRecommendations(containers)
	want := Recommendations{
		"app": {
			"cpu":               rec("cpu", "288m", ""),
			"memory":            rec("memory", "192Mi", "288Mi"),
			"ephemeral-storage": rec("ephemeral-storage", "", "2160Mi"),
		},
		"huge": {"cpu": rec("cpu", "0", "")},
	}
	if diff := cmp.Diff(want, recs, cmpOpts...); diff != "" {
		t.Errorf("recommendations (-want +got):\n%s", diff)
	}
	wantErrs := map[string]error{
		"app ephemeral-storage request": resource.ErrFormatWrong,
		"proxy cpu request":             ErrNegative,
		"proxy cpu limit":               ErrZeroLimit,
		"proxy nvidia.com/gpu ":         ErrUnknownResource,
		"huge memory request":           ErrOutOfRange,
	}
	if len(problems) != len(wantErrs) {
		t.Errorf("%d problems, want %d: %v", len(problems), len(wantErrs), problems)
	}
	for _, p := range problems {
		key := p.Container + " " + p.Resource + " " + string(p.Field)
		if want, ok := wantErrs[key]; !ok || !errors.Is(p.Err, want) {
			t.Errorf("problem %q: %v (%s), want %v", key, p.Err, p, want)
		}
	}
}

func FuzzParseRecommendationValue(f *testing.F) {
	for _, seed := range []string{"288m", "2", "192Mi", "134217727", "0", "-1", "1.5m", "9Ei", "1e3", "", " ", "Mi", "0.0001", "1E18", "123456789012345678901234567890"} {
		f.Add("cpu", "request", seed)
		f.Add("memory", "limit", seed)
	}
	f.Fuzz(func(t *testing.T, res, field, s string) {
		name := corev1.ResourceName(res)
		u, err := ParseRecommendationValue(name, Field(field), s)
		if err != nil {
			return
		}
		if u < 0 || u > maxUnits {
			t.Fatalf("%q parsed to %d units, outside [0, 2^62]", s, u)
		}
		if Field(field) == Limit && u == 0 {
			t.Fatalf("%q parsed to a zero limit", s)
		}
		// The parsed value never loses more than the fraction of one unit rounded up.
		q := resource.MustParse(s)
		if back := u.Quantity(name); back.Cmp(q) < 0 {
			t.Fatalf("%q → %d units = %s, below the written value", s, u, back.String())
		}
		if below := (u - 1).Quantity(name); u > 0 && below.Cmp(q) >= 0 {
			t.Fatalf("%q → %d units, more than one unit above the written value", s, u)
		}
		// Whole profile parsing never panics and never keeps what it reports.
		recs, problems := ParseRecommendations([]v1.ContainerProfile{{Name: "c", Recommendations: map[string]v1.Recommendation{res: {Request: s, Limit: s}}}})
		if len(problems) == 0 && len(recs["c"]) == 0 && s != "" {
			t.Fatalf("%q neither used nor reported", s)
		}
	})
}
