package main

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// file is one entry of an image's single layer.
type file struct {
	path string // absolute path inside the image
	dir  bool
	mode int64
	uid  int
	data []byte
}

// layerTar writes files (and their parent directories) as a sorted tar with fixed times.
func (b *builder) layerTar(files []file) ([]byte, error) {
	entries := map[string]file{}
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean(f.path), "/")
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = file{path: d, dir: true, mode: 0o755}
			}
		}
		f.path = p
		entries[p] = f
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{Name: n, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: b.epoch, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, n+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// image assembles s as a one-layer OCI image on an empty base.
func (b *builder) image(s *spec) (v1.Image, error) {
	raw, err := b.layerTar(s.files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: b.epoch}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "ballast hack/imagebuild", Comment: s.name}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", runtime.GOARCH, created
	user := strconv.Itoa(s.user) + ":" + strconv.Itoa(s.user)
	cf.Config = v1.Config{
		Entrypoint: s.entrypoint,
		Env:        []string{"PATH=/usr/bin:/bin"},
		User:       user,
		WorkingDir: "/",
		Labels:     b.labels(s),
	}
	return mutate.ConfigFile(img, cf)
}

func (b *builder) labels(s *spec) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       s.name,
		"org.opencontainers.image.description": s.description,
		"org.opencontainers.image.version":     s.tag,
		"org.opencontainers.image.created":     b.epoch.Format("2006-01-02T15:04:05Z"),
		"org.opencontainers.image.source":      "https://github.com/ballastk8s/ballast",
		"org.opencontainers.image.url":         "https://github.com/ballastk8s/ballast",
		"org.opencontainers.image.vendor":      "Ballast",
	}
	if b.revision != "" {
		l["org.opencontainers.image.revision"] = b.revision
	}
	return l
}

// write builds s, stores it as <out>/<name>.tar (an OCI layout in a tar, the index
// annotated with the image name containerd and other tools import it under) and returns
// the manifest digest.
func (b *builder) write(s *spec, ref string) (string, error) {
	img, err := b.image(s)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "imagebuild-layout-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	full := normalizeRef(ref)
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          full,
		"org.opencontainers.image.ref.name": full,
	})); err != nil {
		return "", err
	}
	if err := b.tarDir(dir, filepath.Join(b.out, s.name+".tar")); err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// tarDir writes the directory tree dir as a sorted tar with fixed times to dst.
func (b *builder) tarDir(dir, dst string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	for _, n := range names {
		st, err := os.Lstat(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: b.epoch, Typeflag: tar.TypeReg, Size: st.Size()}
		if st.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = n+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !st.IsDir() {
			data, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
