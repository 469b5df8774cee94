package backfill

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxAnswerBytes bounds one query_range answer (a day of one resource of ~1,000 pods at a
// one-minute step is ~60 MB of JSON); a larger one is refused, not buffered without bound.
const maxAnswerBytes = 512 << 20

// Prometheus reads range queries from a Prometheus HTTP API (Prometheus, Thanos Query,
// Mimir, VictoriaMetrics: anything serving /api/v1/query_range).
type Prometheus struct {
	base    *url.URL
	client  *http.Client
	timeout time.Duration
}

// NewPrometheus returns a client for the API at rawURL (e.g. http://prometheus:9090, or a
// path prefix such as http://mimir/prometheus). timeout bounds each query.
func NewPrometheus(rawURL string, timeout time.Duration) (*Prometheus, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the Prometheus URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("the Prometheus URL %q needs an http or https scheme and a host", u.Redacted())
	}
	return &Prometheus{base: u, client: &http.Client{Timeout: timeout}, timeout: timeout}, nil
}

// QueryRange runs query over [start, end] at step and parses the answer.
func (p *Prometheus) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Series, int, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	form := url.Values{}
	form.Set("query", query)
	form.Set("start", strconv.FormatInt(start.Unix(), 10))
	form.Set("end", strconv.FormatInt(end.Unix(), 10))
	form.Set("step", strconv.FormatInt(int64(step/time.Second), 10))
	form.Set("timeout", strconv.FormatInt(int64(p.timeout/time.Second), 10)+"s")
	u := p.base.JoinPath("api", "v1", "query_range")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, 0, fmt.Errorf("querying Prometheus: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("querying Prometheus: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body := io.LimitReader(resp.Body, maxAnswerBytes)
	series, skipped, err := ParseRange(body)
	if err != nil {
		if resp.StatusCode/100 != 2 {
			return nil, 0, fmt.Errorf("querying Prometheus: HTTP %d: %w", resp.StatusCode, err)
		}
		return nil, 0, fmt.Errorf("querying Prometheus: %w", err)
	}
	return series, skipped, nil
}
