package resize

import (
	"context"

	ballastv1 "github.com/ballastk8s/ballast/pkg/apis/ballast/v1"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// StoreOOM reads OOM streams from the store through a store.Lazy, so the control plane
// starts and keeps running while the store is unreachable, and reconnects with the
// re-read password file after the store refused the credentials (a rotated Secret):
// the OOM and pressure fast raises recover from a rotation without a restart.
type StoreOOM struct {
	lazy *store.Lazy
}

// NewStoreOOM returns an OOM (and pressure, pressurestore.go) source for the store at url
// (redis:// or rediss://).
func NewStoreOOM(url string) *StoreOOM { return NewStoreOOMConfig(store.Config{URL: url}) }

// NewStoreOOMConfig returns an OOM (and pressure) source for the store cfg names.
func NewStoreOOMConfig(cfg store.Config) *StoreOOM { return &StoreOOM{lazy: store.NewLazyConfig(cfg)} }

// ReadOOM implements OOMSource.
func (s *StoreOOM) ReadOOM(ctx context.Context, profile, afterID string) ([]store.OOMRecord, error) {
	r, err := s.reader()
	if err != nil {
		return nil, s.lazy.Check(err)
	}
	recs, err := r.ReadOOM(ctx, profile, afterID)
	return recs, s.lazy.Check(err)
}

// reader returns the Reader of the default layout (stream reads do not depend on the
// retention window), connecting first if needed.
func (s *StoreOOM) reader() (*store.Reader, error) {
	return s.lazy.Reader(series.DefaultLayout(ballastv1.DefaultRetentionWindow))
}

// Close releases the connection.
func (s *StoreOOM) Close() { s.lazy.Close() }
