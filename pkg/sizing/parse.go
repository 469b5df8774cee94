package sizing

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Errors of recommendation parsing; a Problem wraps one of them.
var (
	ErrUnknownResource = errors.New("not a recommended resource (cpu, memory, ephemeral-storage)")
	ErrNegative        = errors.New("negative quantity")
	ErrZeroLimit       = errors.New("zero limit")
	ErrOutOfRange      = errors.New("quantity out of range")
)

// maxUnits bounds a recommendation: 2^62 millicores or bytes, far above anything real, so
// that unit arithmetic never overflows.
const maxUnits = Units(1) << 62

// Problem is one recommendation string that was ignored. Parsing never fails as a
// whole: the problem is reported and the rest is used.
type Problem struct {
	Container string
	Resource  string
	// Field is empty when the whole resource entry was ignored.
	Field Field
	Value string
	Err   error
}

func (p Problem) String() string {
	if p.Field == "" {
		return fmt.Sprintf("container %s: recommendation for %q ignored: %v", p.Container, p.Resource, p.Err)
	}
	return fmt.Sprintf("container %s: %s %s recommendation %q ignored: %v", p.Container, p.Resource, p.Field, p.Value, p.Err)
}

// ParseRecommendations reads the recommendations of a WorkloadProfile's
// status.containers. Empty strings mean no recommendation; unparsable values, negative
// values, zero limits and resources other than cpu, memory and ephemeral-storage are
// ignored and reported. It never panics. Containers without any usable value are
// omitted; a repeated container name merges, the later entry winning per field.
func ParseRecommendations(containers []v1.ContainerProfile) (Recommendations, []Problem) {
	recs := Recommendations{}
	var problems []Problem
	for _, cp := range containers {
		for res, r := range cp.Recommendations {
			name := corev1.ResourceName(res)
			if !recommended(name) {
				problems = append(problems, Problem{Container: cp.Name, Resource: res, Err: ErrUnknownResource})
				continue
			}
			if recs[cp.Name] == nil {
				recs[cp.Name] = map[corev1.ResourceName]ResourceRecommendation{}
			}
			out, set := recs[cp.Name][name], false
			for _, f := range [...]struct {
				field Field
				value string
				dst   *Units
				has   *bool
			}{{Request, r.Request, &out.Request, &out.HasRequest}, {Limit, r.Limit, &out.Limit, &out.HasLimit}} {
				if f.value == "" {
					continue
				}
				u, err := ParseRecommendationValue(name, f.field, f.value)
				if err != nil {
					problems = append(problems, Problem{Container: cp.Name, Resource: res, Field: f.field, Value: f.value, Err: err})
					continue
				}
				*f.dst, *f.has, set = u, true, true
			}
			if set {
				recs[cp.Name][name] = out
			} else if len(recs[cp.Name]) == 0 {
				delete(recs, cp.Name)
			}
		}
	}
	return recs, problems
}

// ParseRecommendationValue parses one recommendation string of resource res into Units:
// a Kubernetes quantity that is not negative, not above 2^62 millicores (cpu) or bytes,
// and not zero when it is a limit (a zero limit means no limit and bounds nothing). A
// fraction of a unit rounds up.
func ParseRecommendationValue(res corev1.ResourceName, f Field, s string) (Units, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	switch {
	case q.Sign() < 0:
		return 0, ErrNegative
	case f == Limit && q.IsZero():
		return 0, ErrZeroLimit
	case q.Cmp(maxUnits.Quantity(res)) > 0:
		return 0, ErrOutOfRange
	}
	return UnitsOf(res, q), nil
}

func recommended(res corev1.ResourceName) bool {
	for _, r := range recommendedResources {
		if r == res {
			return true
		}
	}
	return false
}
