// Package understudy is the acceptance suite of SPEC §15 on the sandbox: a real
// kube-apiserver, kube-controller-manager and kube-scheduler, kwok nodes, the real
// ballast-control binary and the real kubectl drain.
package understudy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/test/harness"
	"github.com/ballastk8s/ballast/test/sandbox"
)

var sb *sandbox.Sandbox

func TestMain(m *testing.M) {
	harness.Logger()
	if _, err := harness.Tool("kwok"); err != nil {
		fmt.Fprintln(os.Stderr, "skipping: test-bed tools missing:", err)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "understudy-")
	if err != nil {
		panic(err)
	}
	bin := filepath.Join(dir, "ballast-control")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ballast-control")
	build.Dir = harness.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ballast-control: %v\n%s", err, out)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	sb, err = sandbox.Start(ctx, sandbox.Options{Dir: dir, Nodes: 2, ControlBin: bin, SampleInterval: time.Second,
		Readiness: sandbox.DemoReadiness, Progress: os.Stderr})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	sb.Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "sandbox logs kept in", filepath.Join(dir, "logs"))
	}
	os.Exit(code)
}

func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

func kubectl(c context.Context, args ...string) (string, error) { return sb.Kube.Kubectl(c, args...) }

// drain runs the real kubectl drain and returns its combined stdout and stderr (the 429
// retries are printed on stderr) and its wall time.
func drain(c context.Context, node string, extra ...string) (string, time.Duration, error) {
	bin, err := harness.Tool("kubectl")
	if err != nil {
		return "", 0, err
	}
	args := append([]string{"--kubeconfig", sb.Kube.Kubeconfig, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=150s"}, extra...)
	start := time.Now()
	out, err := exec.CommandContext(c, bin, args...).CombinedOutput()
	return string(out), time.Since(start), err
}

func protect(t *testing.T, c context.Context, ns, name, target string, mut func(*ballastv1.Understudy)) *ballastv1.Understudy {
	t.Helper()
	u := &ballastv1.Understudy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ballastv1.UnderstudySpec{TargetRef: ballastv1.UnderstudyTargetRef{Kind: "Deployment", Name: target}}}
	if mut != nil {
		mut(u)
	}
	if err := sb.Client.Create(c, u); err != nil {
		t.Fatal(err)
	}
	if ns != "ballast-system" {
		// Later drains must not meet this test's protected pods: the namespace goes.
		t.Cleanup(func() {
			_ = sb.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	}
	return u
}

func waitFor(t *testing.T, c context.Context, what string, f func() error) {
	t.Helper()
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		select {
		case <-c.Done():
			t.Fatalf("%s: %v (sandbox logs in %s)", what, err, sb.Logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func phase(c context.Context, ns, name string) (*ballastv1.Understudy, error) {
	u := &ballastv1.Understudy{}
	return u, sb.Client.Get(c, client.ObjectKey{Namespace: ns, Name: name}, u)
}

func wantPhase(t *testing.T, c context.Context, ns, name, want string) *ballastv1.Understudy {
	t.Helper()
	var u *ballastv1.Understudy
	waitFor(t, c, "Understudy "+name+" phase "+want, func() error {
		var err error
		if u, err = phase(c, ns, name); err != nil {
			return err
		}
		if u.Status.Phase != want {
			return fmt.Errorf("phase %q", u.Status.Phase)
		}
		return nil
	})
	return u
}

func pods(c context.Context, ns, app string) ([]corev1.Pod, error) {
	var l corev1.PodList
	err := sb.Client.List(c, &l, client.InNamespace(ns), client.MatchingLabels{"app": app})
	return l.Items, err
}

func ready(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// watcher samples the Ready pods of an app every 100 ms.
type watcher struct {
	mu       sync.Mutex
	min, max int
	samples  int
	// doomed is a pod to follow; doomedEnd is when it was first seen terminating or gone,
	// standIn when two pods were first Ready at once, second when two pods first existed.
	doomed                     string
	doomedEnd, standIn, second time.Time
	stop                       chan struct{}
	done                       chan struct{}
}

func watch(ns, app string, doomed ...string) *watcher {
	w := &watcher{min: 1 << 30, stop: make(chan struct{}), done: make(chan struct{})}
	if len(doomed) > 0 {
		w.doomed = doomed[0]
	}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			ps, err := pods(context.Background(), ns, app)
			if err == nil {
				n, alive := 0, false
				for i := range ps {
					if ready(&ps[i]) {
						n++
					}
					alive = alive || (ps[i].Name == w.doomed && ps[i].DeletionTimestamp == nil)
				}
				w.mu.Lock()
				w.min, w.max, w.samples = min(w.min, n), max(w.max, n), w.samples+1
				if w.doomed != "" && !alive && w.doomedEnd.IsZero() {
					w.doomedEnd = time.Now()
				}
				if len(ps) >= 2 && w.second.IsZero() {
					w.second = time.Now()
				}
				if n >= 2 && w.standIn.IsZero() {
					w.standIn = time.Now()
				}
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *watcher) end() (minReady, maxReady, samples int) {
	close(w.stop)
	<-w.done
	return w.min, w.max, w.samples
}

// onePodOn waits until the app has exactly one pod, Ready, and returns its node.
func onePod(t *testing.T, c context.Context, ns, app string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, c, app+" has one Ready pod", func() error {
		ps, err := pods(c, ns, app)
		if err != nil {
			return err
		}
		if len(ps) != 1 || !ready(&ps[0]) {
			return fmt.Errorf("%d pods", len(ps))
		}
		pod = &ps[0]
		return nil
	})
	return pod
}

func uncordonAll(t *testing.T, _ context.Context) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range sb.Nodes {
		if out, err := kubectl(c, "uncordon", n.Name); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
}
