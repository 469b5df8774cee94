// Package bench holds the benchmarks behind docs/benchmarks.md. They need real servers, so
// TestMain starts them only when -test.bench is given: `make test` pays nothing here.
//
//	make bench   (go test -run '^$' -bench . -benchtime 1x ./test/bench/)
package bench

import (
	"flag"
	"os"
	"testing"

	"github.com/ballastk8s/ballast/test/harness"
)

var srv *harness.Servers

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	harness.Logger()
	harness.Main(m, harness.Need{Kube: true, Valkey: true}, &srv)
}
