package v1

import (
	"embed"
	"io/fs"
	"path"
	"sort"
)

//go:embed crds/*.yaml
var crdFS embed.FS

// Manifest is one embedded CRD manifest.
//
// +kubebuilder:object:generate=false
type Manifest struct {
	Name string // file name, e.g. ballast.tightlinesoftware.com_workloadprofiles.yaml
	Data []byte
}

// CRDs returns the generated CRD manifests of this API version, sorted by file name.
// They are the single source of the CRDs that apply-crds installs and the chart ships
// (make generate copies them into the chart's crds/ folder).
func CRDs() ([]Manifest, error) {
	names, err := fs.Glob(crdFS, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Manifest, 0, len(names))
	for _, n := range names {
		b, err := crdFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Manifest{Name: path.Base(n), Data: b})
	}
	return out, nil
}
