package resize

import (
	"context"
	"sync"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// StoreOOM reads OOM streams from the store at a URL, connecting lazily so the control
// plane starts and keeps running while the store is unreachable.
type StoreOOM struct {
	cfg store.Config

	mu     sync.Mutex
	client *store.Client
	rd     *store.Reader
}

// NewStoreOOM returns an OOM (and pressure, pressurestore.go) source for the store at url
// (redis:// or rediss://).
func NewStoreOOM(url string) *StoreOOM { return NewStoreOOMConfig(store.Config{URL: url}) }

// NewStoreOOMConfig returns an OOM (and pressure) source for the store cfg names.
func NewStoreOOMConfig(cfg store.Config) *StoreOOM { return &StoreOOM{cfg: cfg} }

// ReadOOM implements OOMSource.
func (s *StoreOOM) ReadOOM(ctx context.Context, profile, afterID string) ([]store.OOMRecord, error) {
	r, err := s.connect()
	if err != nil {
		return nil, err
	}
	return r.ReadOOM(ctx, profile, afterID)
}

// connect opens the connection on first use.
func (s *StoreOOM) connect() (*store.Reader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rd == nil {
		c, err := store.OpenConfig(s.cfg)
		if err != nil {
			return nil, err
		}
		r, err := store.NewReader(c, series.DefaultLayout(ballastv1.DefaultRetentionWindow))
		if err != nil {
			c.Close()
			return nil, err
		}
		s.client, s.rd = c, r
	}
	return s.rd, nil
}

// Close releases the connection.
func (s *StoreOOM) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		s.client.Close()
	}
}
