// Package crd tests the CRDs as the real kube-apiserver serves them: schema and CEL
// validation, schema defaults, printer columns, and apply-crds.
package crd

import (
	"testing"

	"github.com/ballastk8s/ballast/test/harness"
)

var srv *harness.Servers

func TestMain(m *testing.M) {
	harness.Main(m, harness.Need{Kube: true}, &srv)
}
