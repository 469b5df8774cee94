// Package crds installs Ballast's CRDs with server-side apply (`ballast-control apply-crds`,
// SPEC §12.1). It is idempotent and safe to run concurrently or by hand.
package crds

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

var crdResource = schema.GroupVersionResource{
	Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
}

// ErrNoManifests means the binary was built without CRD manifests.
var ErrNoManifests = errors.New("no CRD manifests are embedded in this binary")

// Decode parses every manifest and rejects any that is not a CustomResourceDefinition,
// before anything is applied.
func Decode(ms []ballastv1.Manifest) ([]*unstructured.Unstructured, error) {
	if len(ms) == 0 {
		return nil, ErrNoManifests
	}
	out := make([]*unstructured.Unstructured, 0, len(ms))
	for _, m := range ms {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m.Data, &obj.Object); err != nil {
			return nil, fmt.Errorf("decoding manifest %s: %w", m.Name, err)
		}
		if gvk := obj.GroupVersionKind(); gvk.Group != "apiextensions.k8s.io" || gvk.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("manifest %s is a %q, not a CustomResourceDefinition: refusing to apply it", m.Name, gvk.String())
		}
		if obj.GetName() == "" {
			return nil, fmt.Errorf("manifest %s has no metadata.name", m.Name)
		}
		out = append(out, obj)
	}
	return out, nil
}

// Apply server-side-applies the manifests with field manager ballast-crd-installer and
// forced ownership, logging "applied CRD" for each. It stops at the first failure.
func Apply(ctx context.Context, dc dynamic.Interface, ms []ballastv1.Manifest, log logr.Logger) error {
	objs, err := Decode(ms)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		res, err := dc.Resource(crdResource).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{
			FieldManager: ballastv1.CRDFieldManager,
			Force:        true,
		})
		if err != nil {
			return fmt.Errorf("applying CRD %s: %w", obj.GetName(), err)
		}
		log.Info("applied CRD", "name", res.GetName(), "resourceVersion", res.GetResourceVersion())
	}
	return nil
}
