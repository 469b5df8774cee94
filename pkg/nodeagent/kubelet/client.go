package kubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/ballastk8s/ballast/pkg/kubeletstats"
	"github.com/ballastk8s/ballast/pkg/nodeagent/source"
)

// SourceName is the kubelet source's name in the agent's metrics and debug view.
const SourceName = "kubelet"

// Kinds of a failed Summary read (the kind label of ballast_node_source_errors_total); a
// skipped reading is "skipped_<signal>".
const (
	KindUnauthorized   = "unauthorized"
	KindForbidden      = "forbidden"
	KindHTTPError      = "http_error"
	KindTransportError = "transport_error"
	KindDecodeError    = "decode_error"
	KindTokenError     = "token_error"
)

// Errors a caller may act on.
var (
	// ErrUnauthorized: the kubelet answered 401 (token missing, expired or rejected).
	ErrUnauthorized = errors.New("kubelet rejected the bearer token (401)")
	// ErrForbidden: the kubelet answered 403 (the service account lacks nodes/stats for
	// /stats/summary, nodes/configz for /configz).
	ErrForbidden = errors.New("kubelet denied access (403)")
	// ErrStatus: any other non-200 answer.
	ErrStatus = errors.New("unexpected kubelet status")
)

// maxBodyBytes bounds a Summary response (a 250-pod node answers with a few MB).
const maxBodyBytes = 64 << 20

// Config configures a Client.
type Config struct {
	// URL is the kubelet's base URL, https only, e.g. https://10.0.0.5:10250.
	URL string
	// TokenFile holds the bearer token (the projected service-account token); it is
	// re-read whenever it changes. Empty sends no Authorization header.
	TokenFile string
	// CAFile is a PEM bundle that verifies the kubelet's serving certificate. Empty uses
	// the system roots. Verification is always on unless InsecureSkipVerify is set.
	CAFile string
	// InsecureSkipVerify disables serving-certificate verification. Must be chosen
	// explicitly and cannot be combined with CAFile.
	InsecureSkipVerify bool
	// Timeout bounds one request (default 10s).
	Timeout time.Duration
}

// Client reads the local kubelet's Summary API; it is a source.Source. Safe for
// concurrent use.
type Client struct {
	url   string
	base  string
	http  *http.Client
	token *tokenFile
}

// NewClient validates cfg and builds the TLS client.
func NewClient(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("kubelet URL %q: %w", cfg.URL, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("kubelet URL %q: want https://host:port", cfg.URL)
	}
	if cfg.InsecureSkipVerify && cfg.CAFile != "" {
		return nil, errors.New("kubelet client: CAFile and InsecureSkipVerify are mutually exclusive")
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // explicit opt-in
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading kubelet CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kubelet CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	transport := &http.Transport{
		Proxy:               nil, // the kubelet is local: never go through a proxy
		TLSClientConfig:     tlsCfg,
		MaxIdleConns:        2,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: cfg.Timeout,
	}
	c := &Client{
		url:  strings.TrimSuffix(u.String(), "/") + "/stats/summary",
		base: strings.TrimSuffix(u.String(), "/"),
		http: &http.Client{Transport: transport, Timeout: cfg.Timeout},
	}
	if cfg.TokenFile != "" {
		c.token = &tokenFile{path: cfg.TokenFile}
	}
	return c, nil
}

// Fetch returns the raw body of GET /stats/summary. On a 401 it re-reads the token and,
// if the token changed (rotated between the stat and the request), retries once. Errors
// carry their kind (source.KindOf).
func (c *Client) Fetch(ctx context.Context) ([]byte, error) {
	return c.get(ctx, c.url)
}

// get fetches u with the bearer token, retrying once on a 401 with a rotated token.
func (c *Client) get(ctx context.Context, u string) ([]byte, error) {
	body, usedToken, err := c.fetchOnce(ctx, u)
	if errors.Is(err, ErrUnauthorized) && c.token != nil {
		fresh, terr := c.token.get(true)
		if terr == nil && fresh != usedToken {
			body, _, err = c.fetchOnce(ctx, u)
		}
	}
	return body, err
}

func (c *Client) fetchOnce(ctx context.Context, u string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", fmt.Errorf("building kubelet request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	var token string
	if c.token != nil {
		if token, err = c.token.get(false); err != nil {
			return nil, "", source.Fail(KindTokenError, fmt.Errorf("fetching %s: %w", u, err))
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, token, source.Fail(KindTransportError, fmt.Errorf("fetching %s: %w", u, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return nil, token, source.Fail(KindTransportError, fmt.Errorf("reading %s: %w", u, err))
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, token, source.Fail(KindUnauthorized, fmt.Errorf("fetching %s: %w", u, ErrUnauthorized))
	case http.StatusForbidden:
		return nil, token, source.Fail(KindForbidden, fmt.Errorf("fetching %s: %w: %s", u, ErrForbidden, snippet(body)))
	default:
		return nil, token, source.Fail(KindHTTPError, fmt.Errorf("fetching %s: %w %d: %s", u, ErrStatus, resp.StatusCode, snippet(body)))
	}
	if len(body) > maxBodyBytes {
		return nil, token, source.Fail(KindHTTPError, fmt.Errorf("fetching %s: body larger than %d bytes", u, maxBodyBytes))
	}
	return body, token, nil
}

// Summary fetches and decodes the summary.
func (c *Client) Summary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	body, err := c.Fetch(ctx)
	if err != nil {
		return nil, err
	}
	s, err := kubeletstats.DecodeSummary(body)
	if err != nil {
		return nil, source.Fail(KindDecodeError, fmt.Errorf("fetching %s: %w", c.url, err))
	}
	return s, nil
}

// Name is SourceName.
func (c *Client) Name() string { return SourceName }

// Collect fetches the summary and extracts the readings of pods (keyed by UID). Each
// skipped reading is one source.Error of kind "skipped_<signal>", keyed by
// source.ContainerKey (source.PodKey for pod-level ones); the Readings' Skipped is left
// empty. The error is a failed read, with its kind.
func (c *Client) Collect(ctx context.Context, _ time.Time, pods map[string]kubeletstats.Pod) (kubeletstats.Readings, []source.Error, error) {
	s, err := c.Summary(ctx)
	if err != nil {
		return kubeletstats.Readings{}, nil, err
	}
	r := kubeletstats.Extract(s, pods)
	errs := SkipErrors(r.Skipped)
	r.Skipped = nil
	return r, errs, nil
}

// SkipErrors turns skipped readings into the source's typed errors.
func SkipErrors(skips []kubeletstats.Skip) []source.Error {
	if len(skips) == 0 {
		return nil
	}
	out := make([]source.Error, 0, len(skips))
	for _, sk := range skips {
		key := source.PodKey(sk.PodUID)
		if sk.Container != "" {
			key = source.ContainerKey(sk.PodUID, sk.Container)
		}
		out = append(out, source.Error{Key: key, Kind: "skipped_" + string(sk.Signal),
			Err: fmt.Errorf("%s reading skipped: %s", sk.Signal, sk.Reason)})
	}
	return out
}

var _ source.Source[map[string]kubeletstats.Pod, kubeletstats.Readings] = (*Client)(nil)

// snippet shortens a response body for an error message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
