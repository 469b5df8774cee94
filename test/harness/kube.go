package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Kube is a running etcd + kube-apiserver pair on loopback.
type Kube struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	// Kubeconfig is a kubeconfig file for an admin user of this API server.
	Kubeconfig string
	dir        string
}

// KubeOptions tune StartKube.
type KubeOptions struct {
	// WithoutCRDs starts the API server without Ballast's CRDs installed.
	WithoutCRDs bool
	// APIServerFlags are extra kube-apiserver flags as name → value.
	APIServerFlags map[string]string
	// Aggregation turns on the aggregation layer (front-proxy CA, proxy client certificate,
	// request-header flags), which envtest leaves off, so APIServices such as
	// metrics.k8s.io can be served by a real aggregated API server.
	Aggregation bool
}

// Scheme returns a scheme with the core Kubernetes kinds, apiextensions and Ballast's kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(s))
	must(apiextv1.AddToScheme(s))
	must(ballastv1.AddToScheme(s))
	return s
}

// EmbeddedCRDs decodes Ballast's embedded CRD manifests.
func EmbeddedCRDs() ([]*apiextv1.CustomResourceDefinition, error) {
	ms, err := ballastv1.CRDs()
	if err != nil {
		return nil, err
	}
	var out []*apiextv1.CustomResourceDefinition
	for _, m := range ms {
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(m.Data, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", m.Name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// StartKube starts etcd and kube-apiserver from BinDir and, unless told otherwise, installs
// Ballast's CRDs. Stop it with Stop; tests share one per package (see Main).
func StartKube(opts KubeOptions) (*Kube, error) {
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := Tool(b); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "ballast-kube-")
	if err != nil {
		return nil, err
	}
	k := &Kube{Scheme: Scheme(), dir: dir}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    BinDir(),
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
		Scheme:                   k.Scheme,
	}
	if !opts.WithoutCRDs {
		crds, err := EmbeddedCRDs()
		if err != nil {
			return nil, err
		}
		env.CRDs = crds
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	if opts.Aggregation {
		flags, err := aggregationFlags(dir)
		if err != nil {
			return nil, err
		}
		for name, value := range flags {
			args.Set(name, value)
		}
	}
	for name, value := range opts.APIServerFlags {
		args.Set(name, value)
	}
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Append("unsafe-no-fsync", "true")
	k.Env = env
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting etcd + kube-apiserver from %s: %w", BinDir(), err)
	}
	k.Config = cfg
	if k.Client, err = client.New(cfg, client.Options{Scheme: k.Scheme}); err != nil {
		k.Stop()
		return nil, err
	}
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "ballast-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		k.Stop()
		return nil, err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		k.Stop()
		return nil, err
	}
	k.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(k.Kubeconfig, kc, 0o600); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// Stop tears down the API server and etcd and removes their files.
func (k *Kube) Stop() {
	if k == nil {
		return
	}
	if k.Env != nil {
		_ = k.Env.Stop()
	}
	_ = os.RemoveAll(k.dir)
}

// Kubectl runs the real kubectl binary against this API server and returns its stdout;
// the error carries stderr.
func (k *Kube) Kubectl(ctx context.Context, args ...string) (string, error) {
	bin, err := Tool("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %v: %w: %s", args, err, errb.String())
	}
	return out.String(), nil
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
