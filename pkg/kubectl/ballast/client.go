package ballast

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// userAgent identifies the plugin in the API server's logs and audit.
const userAgent = "kubectl-ballast"

func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := ballastv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// restConfig is the caller's connection (kubeconfig, context and the other standard flags).
func (g *globals) restConfig() (*rest.Config, error) {
	cfg, err := g.config.ToRESTConfig()
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("loading kubeconfig: %w", err)}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	return cfg, nil
}

// client is a direct (uncached) client with the caller's credentials.
func (g *globals) client() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	s, err := scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("connecting to the API server: %w", err)}
	}
	return c, nil
}
