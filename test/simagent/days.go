package simagent

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

// DayModels generate one sample of a simulated day at a time, as the node agent would
// record them.
var DayModels = map[string]func(r *rand.Rand, at time.Time) float64{
	// Working set: ~300 MiB with a ±10 % daily swing and 2 % noise, in whole pages.
	"memory": func(r *rand.Rand, at time.Time) float64 {
		v := 300 * (1 << 20) * (1 + 0.1*diurnal(at)) * math.Exp(0.02*r.NormFloat64())
		return math.Round(v/4096) * 4096
	},
	// CPU of a steady service: ~150m, ±20 % daily swing, 15 % noise, whole millicores.
	"cpu-steady": func(r *rand.Rand, at time.Time) float64 {
		return math.Round(150 * (1 + 0.2*diurnal(at)) * math.Exp(0.15*r.NormFloat64()))
	},
	// CPU of a bursty service: ±60 % daily swing and 40 % noise, so a day spreads over
	// ~180 buckets (18m to 800m) — the hard case for a histogram.
	"cpu-noisy": func(r *rand.Rand, at time.Time) float64 {
		return math.Round(150 * (1 + 0.6*diurnal(at)) * math.Exp(0.4*r.NormFloat64()))
	},
}

func diurnal(at time.Time) float64 {
	return math.Sin(2 * math.Pi * float64(at.Unix()%86400) / 86400)
}

// Day is the histogram of model's samples every 10 s over the day starting at start.
func Day(model string, r *rand.Rand, start time.Time) *series.Histogram {
	h := &series.Histogram{}
	for at := start; at.Before(start.Add(24 * time.Hour)); at = at.Add(10 * time.Second) {
		_ = h.Add(DayModels[model](r, at), at) // the models' values are finite and ≥ 0
	}
	return h
}

// RollupDays writes, for each series of every hash (as History's), the days full days of
// rollups before today's as the control plane's compaction stores them (packed, with the
// profile's rollup index and a new epoch): cpu a bursty day, memory and ephemeral storage a steady working
// set. Eight distinct days per model are reused: a rollup's size depends on its buckets, not
// on its uniqueness. l's rollups must be a day wide.
func RollupDays(ctx context.Context, c *store.Client, l series.Layout, hashes []string, today time.Time, days int) error {
	if l.Rollup != 24*time.Hour {
		return fmt.Errorf("rollup days: the layout's rollups are %v, not a day", l.Rollup)
	}
	r := rand.New(rand.NewPCG(13, 13))
	// cpuDays[k][d] is variant k moved to d days before today: the samples' first and last
	// times are those of the day it is stored as, so spans and lastSeen come out as a week.
	cpuDays, memDays := make([][][]byte, 8), make([][][]byte, 8)
	for k := range cpuDays {
		cpu, mem := Day("cpu-noisy", r, today), Day("memory", r, today)
		cpuDays[k], memDays[k] = make([][]byte, days+1), make([][]byte, days+1)
		for d := 1; d <= days; d++ {
			var err error
			if cpuDays[k][d], err = packDaysBefore(cpu, d); err != nil {
				return err
			}
			if memDays[k][d], err = packDaysBefore(mem, d); err != nil {
				return err
			}
		}
	}
	raw := c.Raw()
	var cmds valkey.Commands
	flush := func() error {
		for _, res := range raw.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				return fmt.Errorf("writing rollup days: %w", err)
			}
		}
		cmds = cmds[:0]
		return nil
	}
	for i, hash := range hashes {
		for cn := 0; cn < Containers; cn++ {
			for _, res := range Resources {
				id := series.SeriesID{Profile: hash, Container: ContainerName(cn), Resource: res, Signal: series.SignalUsage}
				for d := 1; d <= days; d++ {
					start := today.AddDate(0, 0, -d)
					payload := memDays[(i+d)%8][d]
					if res == series.ResourceCPU {
						payload = cpuDays[(i+d)%8][d]
					}
					m := series.Member(id, start)
					cmds = append(cmds,
						raw.B().Set().Key(series.RollupKeyOf(hash, m)).Value(valkey.BinaryString(payload)).Exat(l.RollupExpiry(start)).Build(),
						raw.B().Zadd().Key(series.RollupsKey(hash)).ScoreMember().ScoreMember(float64(start.Unix()), m).Build())
				}
			}
		}
		// The epoch moves as a compaction's would, so a reader that loaded the profile
		// before loads it again.
		ttl := int64(l.TTL().Seconds())
		cmds = append(cmds, raw.B().Expire().Key(series.RollupsKey(hash)).Seconds(ttl).Build(),
			raw.B().Incr().Key(series.EpochKey(hash)).Build(), raw.B().Expire().Key(series.EpochKey(hash)).Seconds(ttl).Build())
		if len(cmds) >= 4000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// packDaysBefore is h with its sample times moved d days back, in the stored form.
func packDaysBefore(h *series.Histogram, d int) ([]byte, error) {
	c := h.Clone()
	shift := int64(d) * 86400
	c.FirstUnix, c.LastUnix = c.FirstUnix-shift, c.LastUnix-shift
	return series.Pack(c).MarshalBinary()
}
