//go:build !linux

package ebpf

import (
	"context"
	"errors"
)

// Probe is the loaded programs; off this platform nothing loads.
type Probe struct{ status Status }

// Open reports that eBPF needs Linux.
func Open() *Probe { return OpenWith(Options{}) }

// OpenWith is Open with options.
func OpenWith(Options) *Probe { return &Probe{status: Status{Reason: "eBPF needs Linux"}} }

// Status is what loaded (nothing).
func (p *Probe) Status() Status { return p.status }

// Events is never sent on.
func (p *Probe) Events() <-chan OOMKill { return nil }

// Run returns at once.
func (p *Probe) Run(ctx context.Context) error { return nil }

// Stall reports no data.
func (p *Probe) Stall(cgroupID uint64) (Stall, bool, error) {
	return Stall{}, false, errors.ErrUnsupported
}

// Lost is always 0.
func (p *Probe) Lost() uint64 { return 0 }

// Close does nothing.
func (p *Probe) Close() error { return nil }
