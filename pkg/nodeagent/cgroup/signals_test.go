package cgroup

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestMilliCPU(t *testing.T) {
	at := func(ns uint64, d time.Duration) CPUCounter { return CPUCounter{UsageNanos: ns, Time: t0.Add(d)} }
	cases := map[string]struct {
		prev, cur CPUCounter
		want      int64
		errIs     error
	}{
		"one core for 10s":                  {at(0, 0), at(10e9, 10*time.Second), 1000, nil},
		"quarter core":                      {at(5e9, 0), at(7.5e9, 10*time.Second), 250, nil},
		"idle":                              {at(5e9, 0), at(5e9, 10*time.Second), 0, nil},
		"1ns of cpu in 10s rounds up to 1m": {at(0, 0), at(1, 10*time.Second), 1, nil},
		"exactly 1m is not rounded up":      {at(0, 0), at(10e6, 10*time.Second), 1, nil},
		"just over 1m":                      {at(0, 0), at(10e6+1, 10*time.Second), 2, nil},
		"scenario2 cpu.stat over 5.5s":      {at(0, 0), at(1092180000, 5500*time.Millisecond), 199, nil},
		"counter reset":                     {at(5e9, 0), at(1e9, 10*time.Second), 0, ErrCounterReset},
		"same time":                         {at(0, 0), at(1e9, 0), 0, ErrNoElapsedTime},
		"time went backwards":               {at(0, time.Second), at(1e9, 0), 0, ErrNoElapsedTime},
		"absurd delta":                      {at(0, 0), at(math.MaxUint64, time.Nanosecond), 0, ErrRateOutOfRange},
		"largest delta over one hour":       {at(0, 0), at(math.MaxUint64, time.Hour), 5124095577, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := MilliCPU(tc.prev, tc.cur)
			if !errors.Is(err, tc.errIs) || got != tc.want {
				t.Errorf("got %d, %v; want %d, %v", got, err, tc.want, tc.errIs)
			}
		})
	}
}

// FuzzMilliCPU: the rate is never negative, errors are always one of the sentinels, and a
// rate r satisfies (r-1)·elapsed < Δ·1000 ≤ r·elapsed (the rounding-up contract).
func FuzzMilliCPU(f *testing.F) {
	f.Add(uint64(0), uint64(424773000), int64(10e9))
	f.Add(uint64(1092180000), uint64(5), int64(1))
	f.Add(uint64(0), uint64(math.MaxUint64), int64(-1))
	f.Fuzz(func(t *testing.T, a, b uint64, elapsedNs int64) {
		r, err := MilliCPU(CPUCounter{a, t0}, CPUCounter{b, t0.Add(time.Duration(elapsedNs))})
		if err != nil {
			if !errors.Is(err, ErrCounterReset) && !errors.Is(err, ErrNoElapsedTime) && !errors.Is(err, ErrRateOutOfRange) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if r < 0 {
			t.Fatalf("negative rate %d", r)
		}
		delta, e := float64(b-a)*1000, float64(elapsedNs)
		// Tolerance: float64 rounding of values up to 2^74.
		if !(float64(r-1)*e < delta*(1+1e-12)) || !(delta <= float64(r)*e*(1+1e-12)) {
			t.Fatalf("rate %d for Δ%d over %dns", r, b-a, elapsedNs)
		}
	})
}

func TestWorkingSetBytes(t *testing.T) {
	cases := map[string]struct{ usage, inactive, want uint64 }{
		"plain":                 {100 << 20, 30 << 20, 70 << 20},
		"no inactive file":      {122880, 0, 122880},
		"inactive equals usage": {4096, 4096, 0},
		"inactive above usage":  {4096, 8192, 0},
		"empty":                 {0, 0, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := WorkingSetBytes(tc.usage, tc.inactive); got != tc.want {
				t.Errorf("WorkingSetBytes(%d, %d) = %d, want %d", tc.usage, tc.inactive, got, tc.want)
			}
		})
	}
}
