package harness

import (
	"fmt"
	"os"
	"testing"
)

// Servers are the shared servers of one test package, started once in TestMain.
type Servers struct {
	Kube    *Kube
	Valkey  *Valkey
	Cluster *Cluster
}

// Need says which servers a test package wants.
type Need struct {
	Kube        bool
	KubeOptions KubeOptions
	Valkey      bool
	Cluster     bool
}

// Main starts the servers a package needs, runs its tests and tears the servers down
// whether the tests passed or failed, then exits with the tests' code. A server that
// cannot start fails the package with the reason (for example "run make tools").
//
//	var srv *harness.Servers
//	func TestMain(m *testing.M) { harness.Main(m, harness.Need{Kube: true}, &srv) }
func Main(m *testing.M, need Need, out **Servers) {
	s := &Servers{}
	code := func() int {
		defer s.Stop()
		var err error
		if need.Kube {
			if s.Kube, err = StartKube(need.KubeOptions); err != nil {
				fmt.Fprintln(os.Stderr, "harness:", err)
				return 1
			}
		}
		if need.Valkey {
			if s.Valkey, err = StartValkey(); err != nil {
				fmt.Fprintln(os.Stderr, "harness:", err)
				return 1
			}
		}
		if need.Cluster {
			if s.Cluster, err = StartCluster(); err != nil {
				fmt.Fprintln(os.Stderr, "harness:", err)
				return 1
			}
		}
		*out = s
		return m.Run()
	}()
	os.Exit(code)
}

// Stop tears down every server that was started.
func (s *Servers) Stop() {
	s.Cluster.Stop()
	s.Valkey.Stop()
	s.Kube.Stop()
}
