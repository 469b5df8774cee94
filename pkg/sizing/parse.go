package sizing

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

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
const maxUnits = int64(1) << 62

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
			var out ResourceRecommendation
			for _, f := range [...]struct {
				field Field
				value string
				dst   **resource.Quantity
			}{{Request, r.Request, &out.Request}, {Limit, r.Limit, &out.Limit}} {
				if f.value == "" {
					continue
				}
				q, err := ParseRecommendationValue(name, f.field, f.value)
				if err != nil {
					problems = append(problems, Problem{Container: cp.Name, Resource: res, Field: f.field, Value: f.value, Err: err})
					continue
				}
				*f.dst = &q
			}
			if out.Request == nil && out.Limit == nil {
				continue
			}
			if recs[cp.Name] == nil {
				recs[cp.Name] = map[corev1.ResourceName]ResourceRecommendation{}
			}
			prev := recs[cp.Name][name]
			if out.Request == nil {
				out.Request = prev.Request
			}
			if out.Limit == nil {
				out.Limit = prev.Limit
			}
			recs[cp.Name][name] = out
		}
	}
	return recs, problems
}

// ParseRecommendationValue parses one recommendation string of resource res: a
// Kubernetes quantity that is not negative, not above 2^62 millicores (cpu) or bytes, and
// not zero when it is a limit (a zero limit means no limit and bounds nothing).
func ParseRecommendationValue(res corev1.ResourceName, f Field, s string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, err
	}
	switch {
	case q.Sign() < 0:
		return resource.Quantity{}, ErrNegative
	case f == Limit && q.IsZero():
		return resource.Quantity{}, ErrZeroLimit
	case q.Cmp(fromUnits(res, maxUnits)) > 0:
		return resource.Quantity{}, ErrOutOfRange
	}
	return q, nil
}

func recommended(res corev1.ResourceName) bool {
	for _, r := range recommendedResources {
		if r == res {
			return true
		}
	}
	return false
}

// ParsePercent parses a percentage string of SPEC §2.3: a non-negative decimal with an
// optional trailing "%" ("15%" ≡ "15"). ok is false for anything else.
func ParsePercent(s string) (pct float64, ok bool) {
	d := strings.TrimSuffix(s, "%")
	if d == "" || !isDecimal(d) {
		return 0, false
	}
	v, err := strconv.ParseFloat(d, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// isDecimal accepts digits with at most one '.', and at least one digit.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// toUnits converts q to millicores (cpu) or bytes (anything else), rounding up a
// fraction of a unit.
func toUnits(res corev1.ResourceName, q resource.Quantity) int64 {
	if res == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// fromUnits is the inverse of toUnits: cpu as a DecimalSI milli-quantity ("199m", "2"),
// anything else as BinarySI bytes ("128Mi", "134217727").
func fromUnits(res corev1.ResourceName, v int64) resource.Quantity {
	if res == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	return *resource.NewQuantity(v, resource.BinarySI)
}
