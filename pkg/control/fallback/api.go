package fallback

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
)

// Reading is one pod's PodMetrics.
type Reading struct {
	Namespace, Name string
	point
}

// MetricsAPI reads the PodMetrics of enrolled pods.
type MetricsAPI interface {
	PodMetrics(ctx context.Context) ([]Reading, error)
}

// clientsetAPI reads metrics.k8s.io/v1beta1 through the k8s.io/metrics clientset: one list
// of every enrolled pod's PodMetrics (label selector on the mode label) per call.
type clientsetAPI struct{ c metricsclient.Interface }

// NewMetricsAPI returns the metrics.k8s.io reader for cfg's API server.
func NewMetricsAPI(cfg *rest.Config) (MetricsAPI, error) {
	c, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the metrics.k8s.io client: %w", err)
	}
	return clientsetAPI{c: c}, nil
}

func (a clientsetAPI) PodMetrics(ctx context.Context) ([]Reading, error) {
	if a.c == nil {
		return nil, errNoAPI
	}
	list, err := a.c.MetricsV1beta1().PodMetricses(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: ballastv1.ModeLabel})
	if err != nil {
		return nil, err
	}
	return readings(list.Items), nil
}

// readings converts PodMetrics at the metrics API's own resolution: cpu in whole
// millicores (the rate over Window), memory as working-set bytes, sampled at Timestamp.
func readings(items []metricsv1beta1.PodMetrics) []Reading {
	out := make([]Reading, 0, len(items))
	for _, pm := range items {
		if pm.Timestamp.IsZero() || len(pm.Containers) == 0 {
			continue
		}
		r := Reading{Namespace: pm.Namespace, Name: pm.Name,
			point: point{At: pm.Timestamp.Time.UTC(), Window: pm.Window.Duration, Containers: map[string]usage{}}}
		for _, ct := range pm.Containers {
			cpu, mem := ct.Usage.Cpu(), ct.Usage.Memory()
			if cpu.Sign() < 0 || mem.Sign() < 0 {
				continue
			}
			r.Containers[ct.Name] = usage{MilliCPU: cpu.MilliValue(), MemoryBytes: mem.Value()}
		}
		out = append(out, r)
	}
	return out
}

// APIState is whether metrics.k8s.io answers.
type APIState string

// States of the metrics API as the fallback last saw it.
const (
	// APIUnknown: not asked yet (every node had a live agent so far).
	APIUnknown APIState = ""
	// APIServed: PodMetrics were read.
	APIServed APIState = "Served"
	// APIUnavailable: the group is not served (no APIService, or its server is down).
	APIUnavailable APIState = "Unavailable"
	// APIDisabled: the fallback is turned off.
	APIDisabled APIState = "Disabled"
)

// classify tells "metrics.k8s.io is not served" (no APIService: NotFound; an APIService
// whose server is down: ServiceUnavailable) from other errors, which are transient.
func classify(err error) (APIState, string) {
	var se apierrors.APIStatus
	switch {
	case errors.Is(err, errNoAPI):
		return APIUnavailable, err.Error()
	case apierrors.IsNotFound(err):
		return APIUnavailable, "metrics.k8s.io/v1beta1 is not served by the API server (no metrics-server or other provider registered)"
	case apierrors.IsServiceUnavailable(err), errors.As(err, &se) && se.Status().Code == 503:
		return APIUnavailable, "metrics.k8s.io/v1beta1 is registered but its server does not answer: " + firstLine(err.Error())
	}
	return APIUnknown, firstLine(err.Error())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
