package control

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/control/config"
)

func eventually5s(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually(t, 5*time.Second, what, func() error { // SPEC §10.1: every replica within 5 s
		if !cond() {
			return fmt.Errorf("not yet")
		}
		return nil
	})
}

// TestKillSwitch drives the kill switch through the ConfigMap and spec.suspended and checks
// the state, the gauges and the transition counters.
func TestKillSwitch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = operatorNS
	c := srv.Kube.Client
	mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	mgr, err := ctrl.NewManager(srv.Kube.Config, ctrl.Options{Scheme: srv.Kube.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := config.NewMetrics(reg)
	state := config.NewState(m)
	var changes []config.Snapshot
	state.OnChange(func(_, n config.Snapshot) { changes = append(changes, n) })
	if err := config.New(clock.RealClock{}, mgr.GetClient(), state, m, ns, ctrl.Log.WithName("config")).Register(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	if state.Get().Active() || state.Get().Config != nil {
		t.Fatalf("initial state = %+v, want inactive and no config", state.Get())
	}
	cfg := &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.BallastConfigName},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"app"}}}
	if err := c.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	eventually5s(t, "BallastConfig observed", func() bool { return state.Get().Config != nil })
	// An object of another name is ignored.
	other := &ballastv1.BallastConfig{ObjectMeta: metav1.ObjectMeta{Name: "not-ballast"},
		Spec: ballastv1.BallastConfigSpec{IdentityLabels: []string{"x"}, Suspended: true}}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ballastv1.KillSwitchConfigMap, Namespace: ns}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually5s(t, "ConfigMap activates", func() bool { return state.Get().KillSwitch == config.ReasonConfigMap })

	patch := client.MergeFrom(cfg.DeepCopy())
	cfg.Spec.Suspended = true
	if err := c.Patch(ctx, cfg, patch); err != nil {
		t.Fatal(err)
	}
	eventually5s(t, "both reasons", func() bool { return state.Get().KillSwitch == config.ReasonBoth })
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually5s(t, "suspended alone", func() bool { return state.Get().KillSwitch == config.ReasonSuspended })
	patch = client.MergeFrom(cfg.DeepCopy())
	cfg.Spec.Suspended = false
	if err := c.Patch(ctx, cfg, patch); err != nil {
		t.Fatal(err)
	}
	eventually5s(t, "released", func() bool { return !state.Get().Active() })

	if got := testutil.ToFloat64(m.Transitions.WithLabelValues("activated")); got != 1 {
		t.Errorf("activations = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.Transitions.WithLabelValues("deactivated")); got != 1 {
		t.Errorf("deactivations = %v, want 1", got)
	}
	for _, r := range []string{config.ReasonConfigMap, config.ReasonBoth, config.ReasonSuspended} {
		if got := testutil.ToFloat64(m.Active.WithLabelValues(r)); got != 0 {
			t.Errorf("active{reason=%q} = %v after release, want 0", r, got)
		}
	}
	if len(changes) < 5 {
		t.Errorf("listeners saw %d changes, want ≥ 5", len(changes))
	}

	if err := c.Delete(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	eventually5s(t, "BallastConfig removal observed", func() bool { return state.Get().Config == nil })
}
