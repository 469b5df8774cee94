package harness

import (
	"io"
	"os"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Logger installs controller-runtime's logger for in-process components under test:
// discarded unless BALLAST_TEST_LOG=1 (then debug-level to stderr).
func Logger() logr.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("BALLAST_TEST_LOG") == "1" {
		w = os.Stderr
	}
	l := zap.New(zap.WriteTo(w), zap.UseDevMode(true))
	ctrl.SetLogger(l)
	return l
}
