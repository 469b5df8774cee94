package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/sandbox"
)

// side is what differs between the two systems; the scenario (compare.go) is the same.
type side interface {
	// enroll deploys app into ns under the system's in-place mode (Ballast resize, VPA
	// InPlaceOrRecreate).
	enroll(ctx context.Context, ns string, a sandbox.App) error
	// enrollAdmission deploys app into ns under the admission-only mode (Ballast apply, VPA
	// Initial with its VPA object created first, the user's best case).
	enrollAdmission(ctx context.Context, ns string, a sandbox.App) error
	// teardown removes everything the app's manifests made (for VPA, its VPA object too).
	teardown(ctx context.Context, ns string, a sandbox.App) error
	// target is the usable recommendation for app in ns (nil while there is none).
	target(ctx context.Context, ns string, a sandbox.App) (*rec, error)
}

// rec is a recommendation: requests of the first container.
type rec struct{ cpu, mem resource.Quantity }

func (r *rec) String() string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("cpu %s, memory %s", r.cpu.String(), mib(&r.mem))
}

type ballastSide struct{ s *sandbox.Sandbox }

func (b ballastSide) enroll(ctx context.Context, ns string, a sandbox.App) error {
	return b.s.Deploy(ctx, ns, a, ballastv1.ModeResize)
}

func (b ballastSide) enrollAdmission(ctx context.Context, ns string, a sandbox.App) error {
	return b.s.Deploy(ctx, ns, a, ballastv1.ModeApply)
}

func (b ballastSide) teardown(ctx context.Context, ns string, a sandbox.App) error {
	return b.s.Teardown(ctx, ns, a.Name, waitStep)
}

// target is the profile's recommendation once it is Sufficient (what the webhook and the
// resize rung act on); before that Ballast has nothing usable.
func (b ballastSide) target(ctx context.Context, ns string, a sandbox.App) (*rec, error) {
	wp, err := b.s.Profile(ctx, ns, a.Name)
	if err != nil || wp.Status.State != ballastv1.StateSufficient || len(wp.Status.Containers) == 0 {
		return nil, nil //nolint:nilerr // not bound or not ready yet: no usable recommendation
	}
	r := wp.Status.Containers[0].Recommendations
	c, err1 := resource.ParseQuantity(r["cpu"].Request)
	m, err2 := resource.ParseQuantity(r["memory"].Request)
	if err1 != nil || err2 != nil {
		return nil, nil
	}
	return &rec{cpu: c, mem: m}, nil
}

type vpaSide struct{ s *sandbox.Sandbox }

func (v vpaSide) enroll(ctx context.Context, ns string, a sandbox.App) error {
	if err := v.s.Deploy(ctx, ns, a, ""); err != nil {
		return err
	}
	return v.s.CreateVPA(ctx, ns, a.Name, sandbox.VPAModeInPlaceOrRecreate)
}

func (v vpaSide) enrollAdmission(ctx context.Context, ns string, a sandbox.App) error {
	// The namespace must exist for the VPA object; Deploy creates it if missing.
	if err := v.s.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	if err := v.s.CreateVPA(ctx, ns, a.Name, sandbox.VPAModeInitial); err != nil {
		return err
	}
	return v.s.Deploy(ctx, ns, a, "")
}

func (v vpaSide) teardown(ctx context.Context, ns string, a sandbox.App) error {
	if err := v.s.DeleteVPA(ctx, ns, a.Name); err != nil {
		return err
	}
	return v.s.Teardown(ctx, ns, a.Name, waitStep)
}

func (v vpaSide) target(ctx context.Context, ns string, a sandbox.App) (*rec, error) {
	c, m, err := v.s.VPATarget(ctx, ns, a.Name)
	if err != nil || c == nil {
		return nil, nil //nolint:nilerr // no VPA status yet
	}
	return &rec{cpu: *c, mem: *m}, nil
}

func mib(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return fmt.Sprintf("%.0fMi", float64(q.Value())/(1<<20))
}
