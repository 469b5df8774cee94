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
	reader *store.Reader
}

// NewStoreOOM returns an OOM source for the store at url (redis:// or rediss://).
func NewStoreOOM(url string) *StoreOOM { return NewStoreOOMConfig(store.Config{URL: url}) }

// NewStoreOOMConfig returns an OOM source for the store cfg names.
func NewStoreOOMConfig(cfg store.Config) *StoreOOM { return &StoreOOM{cfg: cfg} }

// ReadOOM implements OOMSource.
func (s *StoreOOM) ReadOOM(ctx context.Context, profile, afterID string) ([]store.OOMRecord, error) {
	s.mu.Lock()
	if s.reader == nil {
		c, err := store.OpenConfig(s.cfg)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		r, err := store.NewReader(c, series.DefaultLayout(ballastv1.DefaultRetentionWindow))
		if err != nil {
			c.Close()
			s.mu.Unlock()
			return nil, err
		}
		s.client, s.reader = c, r
	}
	r := s.reader
	s.mu.Unlock()
	return r.ReadOOM(ctx, profile, afterID)
}

// Close releases the connection.
func (s *StoreOOM) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		s.client.Close()
	}
}
