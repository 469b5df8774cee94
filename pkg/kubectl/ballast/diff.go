package ballast

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ExitDiff is diff's exit code with --exit-code when it found changes (like git diff
// --exit-code), so a CI job can fail on manifests that drifted from Ballast's sizes.
const ExitDiff = 3

type diffOptions struct {
	g          *globals
	files      []string
	kustomize  string
	helmValues string
	helmProf   string
	helmKeys   []string
	profiles   string
	idLabels   []string
	write      bool
	exitCode   bool
}

func newDiffCommand(g *globals) *cobra.Command {
	o := &diffOptions{g: g}
	cmd := &cobra.Command{
		Use:   "diff (-f FILE|DIR ... | -k DIR | --helm-values FILE --helm-profile PROFILE) [--profiles FILE] [--write]",
		Short: "Show (or write) the resources Ballast recommends as a diff of your manifests",
		Long: `diff hands Ballast's sizes back to Git: for the manifests named by -f (files, or
directories searched for *.yaml and *.yml), -k (kustomize build output) or --helm-values
(a chart's values file), it prints the change to their resources that Ballast recommends
as a unified diff, or with --write makes it in place. Only the bytes of the values that
change are touched: comments, key order, quoting, anchors and indentation stay.

A workload's recommendations come from the WorkloadProfile its pod template maps to:
from the cluster (identity labels and policies as admission resolves them), or offline
from --profiles, a 'kubectl get workloadprofiles -o yaml' dump. Values are those the
webhook would write at admission (requests, limits the policy manages, clamps to limits,
the one-unit step-down, QoS pinning).`,
		Example: `  kubectl ballast diff -f deploy/
  kubectl ballast diff -k overlays/prod --profiles profiles.yaml
  kubectl ballast diff --helm-values values.yaml --helm-profile web--server--default-a9696153 --helm-key resources=app
  kubectl ballast diff -f deploy/ --write`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "manifest file or directory (repeatable)")
	f.StringVarP(&o.kustomize, "kustomize", "k", "", "kustomization directory: diff its build output")
	f.StringVar(&o.helmValues, "helm-values", "", "a chart's values file whose resources maps are sized")
	f.StringVar(&o.helmProf, "helm-profile", "", "the WorkloadProfile that sizes --helm-values")
	f.StringArrayVar(&o.helmKeys, "helm-key", nil, "PATH=[PROFILE/]CONTAINER: the container a resources key of --helm-values sizes (repeatable)")
	f.StringVar(&o.profiles, "profiles", "", "offline: a 'kubectl get workloadprofiles -o yaml' dump instead of the cluster")
	f.StringSliceVar(&o.idLabels, "identity-labels", nil, "with --profiles: the identity labels (default: the chart's app.kubernetes.io/name,app.kubernetes.io/component)")
	f.BoolVar(&o.write, "write", false, "write the change into the files instead of printing it")
	f.BoolVar(&o.exitCode, "exit-code", false, fmt.Sprintf("exit with %d when there is a change", ExitDiff))
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml")
	_ = cmd.MarkFlagDirname("kustomize")
	_ = cmd.MarkFlagFilename("helm-values", "yaml", "yml")
	_ = cmd.MarkFlagFilename("profiles", "yaml", "yml")
	_ = cmd.RegisterFlagCompletionFunc("helm-profile", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return (&profilesOptions{globals: g}).completeProfiles(cmd)
	})
	return cmd
}

// input is one YAML stream to size and how.
type input struct {
	name     string // shown in the diff header and notes
	path     string // file to write back, empty when it cannot be written (-k)
	src      []byte
	helm     bool
	mode     fs.FileMode
	readOnly string // why --write cannot write it
}

func (o *diffOptions) run(cmd *cobra.Command) error {
	if len(o.files) == 0 && o.kustomize == "" && o.helmValues == "" {
		return usageError("name the manifests: -f FILE|DIR, -k DIR or --helm-values FILE")
	}
	if o.kustomize != "" && o.write {
		return usageError("--write cannot write kustomize build output back to its bases; diff the files with -f")
	}
	if o.helmValues == "" && (o.helmProf != "" || len(o.helmKeys) > 0) {
		return usageError("--helm-profile and --helm-key need --helm-values")
	}
	keys, err := parseHelmKeys(o.helmKeys, o.helmProf)
	if err != nil {
		return err
	}
	inputs, err := o.inputs()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	src, err := o.source(ctx, cmd)
	if err != nil {
		return err
	}
	ns, err := o.defaultNamespace(cmd)
	if err != nil {
		return err
	}
	sz := &sizer{src: src, namespace: ns}
	changed := false
	for _, in := range inputs {
		f, err := parseYAMLFile(in.name, in.src)
		if err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
		if in.helm {
			err = sz.sizeHelmValues(ctx, f, o.helmProf, keys)
		} else {
			err = sz.sizeManifests(ctx, f)
		}
		if err != nil {
			return err
		}
		out := f.apply()
		for _, n := range f.notes {
			fmt.Fprintf(o.g.streams.ErrOut, "note: %s: %s\n", in.name, n)
		}
		if string(out) == string(in.src) {
			continue
		}
		changed = true
		if !o.write {
			fmt.Fprint(o.g.out(), unifiedDiff(in.name, in.src, out))
			continue
		}
		if err := os.WriteFile(in.path, out, in.mode); err != nil {
			return fmt.Errorf("writing %s: %w", in.path, err)
		}
		fmt.Fprintf(o.g.out(), "wrote %s\n", in.name)
	}
	if changed && o.exitCode {
		return &exitError{code: ExitDiff, silent: true}
	}
	return nil
}

// source is --profiles when given, else the cluster.
func (o *diffOptions) source(ctx context.Context, cmd *cobra.Command) (recSource, error) {
	if o.profiles != "" {
		ids := o.idLabels
		if len(ids) == 0 {
			ids = defaultIdentityLabels
		}
		return loadFileSource(o.profiles, ids)
	}
	if len(o.idLabels) > 0 {
		return nil, usageError("--identity-labels is for --profiles; against a cluster BallastConfig names them")
	}
	c, err := o.g.client()
	if err != nil {
		return nil, err
	}
	s, err := newClusterSource(ctx, c)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	return s, nil
}

// defaultNamespace is the namespace of objects that name none: -n, else the kubeconfig's
// (default when there is none).
func (o *diffOptions) defaultNamespace(cmd *cobra.Command) (string, error) {
	if fl := cmd.Flags().Lookup("namespace"); fl != nil && fl.Changed {
		return *o.g.config.Namespace, nil
	}
	ns, _, err := o.g.config.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		return "default", nil
	}
	return ns, nil
}

func (o *diffOptions) inputs() ([]input, error) {
	var out []input
	for _, f := range o.files {
		paths, err := yamlFiles(f)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			in, err := readInput(p)
			if err != nil {
				return nil, err
			}
			out = append(out, in)
		}
	}
	if o.kustomize != "" {
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		rm, err := k.Run(filesys.MakeFsOnDisk(), o.kustomize)
		if err != nil {
			return nil, usageError("kustomize build %s: %v", o.kustomize, err)
		}
		y, err := rm.AsYaml()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", o.kustomize, err)
		}
		out = append(out, input{name: filepath.ToSlash(filepath.Clean(o.kustomize)) + " (kustomize build)", src: y})
	}
	if o.helmValues != "" {
		in, err := readInput(o.helmValues)
		if err != nil {
			return nil, err
		}
		in.helm = true
		out = append(out, in)
	}
	return out, nil
}

func readInput(p string) (input, error) {
	st, err := os.Stat(p)
	if err != nil {
		return input{}, usageError("%v", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return input{}, usageError("%v", err)
	}
	return input{name: filepath.ToSlash(filepath.Clean(p)), path: p, src: b, mode: st.Mode().Perm()}, nil
}

// yamlFiles is p itself when it is a file, else every *.yaml and *.yml below it, sorted.
func yamlFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, usageError("%v", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(q, ".yaml") || strings.HasSuffix(q, ".yml")) {
			out = append(out, q)
		}
		return nil
	})
	if err != nil {
		return nil, usageError("reading %s: %v", p, err)
	}
	sort.Strings(out)
	return out, nil
}
