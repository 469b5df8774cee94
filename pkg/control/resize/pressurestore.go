package resize

import (
	"context"

	"github.com/ballastk8s/ballast/pkg/store"
)

// ReadPressure implements PressureSource over the same lazy connection as ReadOOM.
func (s *StoreOOM) ReadPressure(ctx context.Context, profile, afterID string) ([]store.PressureRecord, error) {
	r, err := s.reader()
	if err != nil {
		return nil, s.lazy.Check(err)
	}
	recs, err := r.ReadPressure(ctx, profile, afterID)
	return recs, s.lazy.Check(err)
}
