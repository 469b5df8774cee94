package harness

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Prometheus is a real Prometheus server (v3.16, hack/tools/prometheus) on 127.0.0.1:
// either its TSDB was filled before it started with `promtool tsdb create-blocks-from
// openmetrics` (StartPrometheus: hours of history in seconds, without waiting for
// scrapes), or it scrapes live stand-ins (StartScrapingPrometheus).
type Prometheus struct {
	URL  string
	dir  string
	proc *Proc
}

// StartPrometheus writes openMetrics (OpenMetrics text with sample timestamps, ending in
// "# EOF") into TSDB blocks and starts Prometheus on them, with no scrape targets.
func StartPrometheus(openMetrics []byte) (*Prometheus, error) {
	promtool, err := Tool("promtool")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ballast-prometheus-")
	if err != nil {
		return nil, err
	}
	data, input := filepath.Join(dir, "data"), filepath.Join(dir, "history.om")
	if err := os.WriteFile(input, openMetrics, 0o644); err != nil {
		return nil, err
	}
	// 24h blocks: one or two blocks for a day of history instead of twelve 2h ones.
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", input, data).CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("promtool tsdb create-blocks-from openmetrics: %w: %s", err, tail(out))
	}
	_ = os.Remove(input)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte("global:\n  scrape_interval: 15s\n"), 0o644); err != nil {
		return nil, err
	}
	return startPrometheus(dir, 0)
}

// StartPrometheusConfig starts a real Prometheus with an empty TSDB and config (a
// prometheus.yml) on 127.0.0.1:port (a free port when 0), and waits until it is ready.
func StartPrometheusConfig(config string, port int) (*Prometheus, error) {
	dir, err := os.MkdirTemp("", "ballast-prometheus-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	return startPrometheus(dir, port)
}

// startPrometheus starts Prometheus with dir/prometheus.yml and its TSDB in dir/data on
// port (a free one when 0), and waits until it is ready.
func startPrometheus(dir string, port int) (*Prometheus, error) {
	prom, err := Tool("prometheus")
	if err != nil {
		return nil, err
	}
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := StartProc(dir, "prometheus", prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--storage.tsdb.retention.time=30d", "--web.listen-address="+addr, "--log.level=warn")
	if err != nil {
		return nil, err
	}
	pr := &Prometheus{URL: "http://" + addr, dir: dir, proc: p}
	err = Poll(context.Background(), 60*time.Second, "prometheus ready", func() error {
		if ok, err := p.Exited(); ok {
			return fmt.Errorf("prometheus exited (%v): %s", err, Tail(p.Log, 20))
		}
		resp, err := http.Get(pr.URL + "/-/ready")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/-/ready: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		pr.Stop()
		return nil, err
	}
	return pr, nil
}

// Stop ends the server and removes its data.
func (p *Prometheus) Stop() {
	p.proc.Stop(5 * time.Second)
	_ = os.RemoveAll(p.dir)
}

func tail(b []byte) []byte {
	if i := len(b) - 2000; i > 0 {
		b = b[i:]
	}
	return bytes.TrimSpace(b)
}
