package ballast

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"go.yaml.in/yaml/v3"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/identity"
	"github.com/ballastk8s/ballast/pkg/policy"
	"github.com/ballastk8s/ballast/pkg/sizing"
)

// recSource finds the WorkloadProfile whose recommendations size a pod template, and the
// calculator parameters of its policy. why explains a nil profile.
type recSource interface {
	forTemplate(ctx context.Context, f policy.PodFacts) (wp *ballastv1.WorkloadProfile, p sizing.Params, why string, err error)
	byName(ctx context.Context, name string) (wp *ballastv1.WorkloadProfile, p sizing.Params, why string, err error)
}

// usable says why a profile cannot size anything yet, empty when it can: admission too
// writes only the recommendations of a Sufficient profile (SPEC §7.2).
func usable(wp *ballastv1.WorkloadProfile) string {
	if wp.Status.State != ballastv1.StateSufficient {
		return fmt.Sprintf("profile %s is %s, not Sufficient: no recommendation to hand back yet", wp.Name, orDefault(wp.Status.State, ballastv1.StateAccruing))
	}
	return ""
}

// clusterSource binds templates exactly as admission does (bindFacts: identity labels of
// BallastConfig, policy.Resolve over the compiled policies) and reads the profile.
type clusterSource struct {
	c        client.Reader
	idLabels []string
	infos    map[string][]policyInfo // by namespace
}

func newClusterSource(ctx context.Context, c client.Reader) (*clusterSource, error) {
	ids, err := identityLabels(ctx, c)
	if err != nil {
		return nil, err
	}
	return &clusterSource{c: c, idLabels: ids, infos: map[string][]policyInfo{}}, nil
}

func (s *clusterSource) policiesOf(ctx context.Context, ns string) ([]policyInfo, error) {
	if ps, ok := s.infos[ns]; ok {
		return ps, nil
	}
	ps, err := policies(ctx, s.c, ns)
	if err != nil {
		return nil, err
	}
	s.infos[ns] = ps
	return ps, nil
}

func (s *clusterSource) forTemplate(ctx context.Context, f policy.PodFacts) (*ballastv1.WorkloadProfile, sizing.Params, string, error) {
	infos, err := s.policiesOf(ctx, f.Namespace)
	if err != nil {
		return nil, sizing.Params{}, "", err
	}
	b := bindFacts(f, "", s.idLabels, compiledOf(infos))
	if b.Policy == nil {
		return nil, sizing.Params{}, "no policy governs it (profile " + b.ProfileName + "), so Ballast sizes nothing", nil
	}
	wp, why, err := s.get(ctx, b.ProfileName)
	if wp == nil || err != nil {
		return nil, sizing.Params{}, why, err
	}
	return wp, sizing.ParamsFor(b.Policy), "", nil
}

func (s *clusterSource) byName(ctx context.Context, name string) (*ballastv1.WorkloadProfile, sizing.Params, string, error) {
	wp, why, err := s.get(ctx, name)
	if wp == nil || err != nil {
		return nil, sizing.Params{}, why, err
	}
	if wp.Status.PolicyRef == nil {
		return nil, sizing.Params{}, "profile " + name + " has no policy, so Ballast sizes nothing", nil
	}
	infos, err := s.policiesOf(ctx, wp.Status.PolicyRef.Namespace)
	if err != nil {
		return nil, sizing.Params{}, "", err
	}
	p := findPolicy(infos, *wp.Status.PolicyRef)
	if p == nil {
		return nil, sizing.Params{}, "the policy of profile " + name + " is missing or invalid", nil
	}
	return wp, sizing.ParamsFor(p), "", nil
}

func (s *clusterSource) get(ctx context.Context, name string) (*ballastv1.WorkloadProfile, string, error) {
	wp := &ballastv1.WorkloadProfile{}
	switch err := s.c.Get(ctx, client.ObjectKey{Name: name}, wp); {
	case apierrors.IsNotFound(err):
		return nil, "profile " + name + " does not exist (no pod of it has been enrolled yet)", nil
	case err != nil:
		return nil, "", fmt.Errorf("reading WorkloadProfile %s: %w", name, err)
	}
	if why := usable(wp); why != "" {
		return nil, why, nil
	}
	return wp, "", nil
}

// fileSource works offline from a `kubectl get workloadprofiles -o yaml` dump. Without the
// policies, a template's profile is the one whose status.selectorLabels equal the
// template's identity tuple (pkg/identity); a ResourcePolicy's profile counts only in its
// own namespace. Two or more left is ambiguous and sizes nothing. The managed fields are
// those the profile holds recommendations for: a profile's recommendations are exactly
// its policy's metrics.
type fileSource struct {
	name     string
	idLabels []string
	profiles []ballastv1.WorkloadProfile
}

func loadFileSource(path string, idLabels []string) (*fileSource, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError("reading --profiles: %v", err)
	}
	s := &fileSource{name: path, idLabels: idLabels}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var raw any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, usageError("parsing --profiles %s: %v", path, err)
		}
		js, err := json.Marshal(raw)
		if err != nil {
			return nil, usageError("parsing --profiles %s: %v", path, err)
		}
		var doc struct {
			Kind  string                      `json:"kind"`
			Items []ballastv1.WorkloadProfile `json:"items"`
		}
		if err := json.Unmarshal(js, &doc); err != nil {
			return nil, usageError("parsing --profiles %s: %v", path, err)
		}
		switch {
		case strings.HasSuffix(doc.Kind, "List"):
			s.profiles = append(s.profiles, doc.Items...)
		case doc.Kind == "WorkloadProfile":
			var wp ballastv1.WorkloadProfile
			if err := json.Unmarshal(js, &wp); err != nil {
				return nil, usageError("parsing --profiles %s: %v", path, err)
			}
			s.profiles = append(s.profiles, wp)
		}
	}
	return s, nil
}

func (s *fileSource) forTemplate(_ context.Context, f policy.PodFacts) (*ballastv1.WorkloadProfile, sizing.Params, string, error) {
	_, sel := identity.Tuple(s.idLabels, f.Labels)
	var names []string
	var match []*ballastv1.WorkloadProfile
	for i := range s.profiles {
		wp := &s.profiles[i]
		if !maps.Equal(wp.Status.SelectorLabels, sel) {
			continue
		}
		if r := wp.Status.PolicyRef; r != nil && r.Kind == ballastv1.KindResourcePolicy && r.Namespace != f.Namespace {
			continue
		}
		match = append(match, wp)
		names = append(names, wp.Name)
	}
	switch len(match) {
	case 0:
		return nil, sizing.Params{}, "no profile in " + s.name + " has its identity " + tupleText(s.idLabels, sel), nil
	case 1:
	default:
		sort.Strings(names)
		return nil, sizing.Params{}, fmt.Sprintf("%d profiles in %s share its identity %s under different policies (%s): run against the cluster to resolve the policy",
			len(match), s.name, tupleText(s.idLabels, sel), strings.Join(names, ", ")), nil
	}
	return s.checked(match[0])
}

func (s *fileSource) byName(_ context.Context, name string) (*ballastv1.WorkloadProfile, sizing.Params, string, error) {
	for i := range s.profiles {
		if s.profiles[i].Name == name {
			return s.checked(&s.profiles[i])
		}
	}
	return nil, sizing.Params{}, "profile " + name + " is not in " + s.name, nil
}

func (s *fileSource) checked(wp *ballastv1.WorkloadProfile) (*ballastv1.WorkloadProfile, sizing.Params, string, error) {
	if why := usable(wp); why != "" {
		return nil, sizing.Params{}, why, nil
	}
	return wp, managedParams(wp), "", nil
}

// managedParams are calculator parameters managing exactly the fields the profile holds
// recommendations for.
func managedParams(wp *ballastv1.WorkloadProfile) sizing.Params {
	p := sizing.Params{Managed: sizing.Managed{}}
	for _, c := range wp.Status.Containers {
		for res, r := range c.Recommendations {
			if r.Request != "" {
				p.Managed[sizing.Target{Resource: corev1.ResourceName(res), Field: sizing.Request}] = true
			}
			if r.Limit != "" {
				p.Managed[sizing.Target{Resource: corev1.ResourceName(res), Field: sizing.Limit}] = true
			}
		}
	}
	return p
}

func tupleText(keys []string, sel map[string]string) string {
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+sel[k])
	}
	return strings.Join(parts, ",")
}
