package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/test/simagent"
)

// BenchmarkReaderCacheMemory measures the Go heap a Reader's cache holds per series once
// every profile has been read, with the history a profile has after 2 hours (today's
// rollup) and after a whole default retention window (7 daily rollups and today's). Each
// profile has 2 containers × (cpu, memory, memory peak), cpu a day of bursty samples
// (~180 buckets), memory the steady working set of BenchmarkStorage. The rollups are
// written as the reader's compaction writes them; the live scale bench only ever runs with
// 2 hours of history, so this is how its figure extends to a cluster that kept a week.
func BenchmarkReaderCacheMemory(b *testing.B) {
	const profiles = 500
	for _, days := range []int{0, 7} {
		b.Run(fmt.Sprintf("history=%dd", days), func(b *testing.B) {
			ctx := context.Background()
			c := open(b, srv.Valkey.URL())
			l := series.DefaultLayout(168 * time.Hour)
			// Just before midnight, when a reader holds the most it ever holds: every
			// profile's daily reload has split off the day about to leave the retention
			// window, so the oldest day, the merged days (yesterday has settled) and today.
			// (From midnight until yesterday settles it is yesterday instead of the oldest
			// day; the rest of the day the merged days and today only.)
			today := l.RollupStart(time.Now().UTC())
			now := today.Add(24*time.Hour - time.Minute)
			r := rand.New(rand.NewPCG(13, 13))
			day := func(kind string) []byte {
				p, _ := series.Pack(simagent.Day(kind, r, today)).MarshalBinary()
				return p
			}
			// Eight distinct days per kind, reused: the bytes per bucket matter, not uniqueness.
			var cpuDays, memDays [8][]byte
			for i := range cpuDays {
				cpuDays[i], memDays[i] = day("cpu-noisy"), day("memory")
			}
			var ps []string
			var nSeries int
			raw := c.Raw()
			for i := 0; i < profiles; i++ {
				p := newProfile()
				ps = append(ps, p)
				var cmds valkey.Commands
				for _, ctr := range []string{"app", "sidecar"} {
					for _, s := range []struct {
						res, sig string
						days     *[8][]byte
					}{{series.ResourceCPU, series.SignalUsage, &cpuDays}, {series.ResourceMemory, series.SignalUsage, &memDays}, {series.ResourceMemory, series.SignalPeak, &memDays}} {
						id := series.SeriesID{Profile: p, Container: ctr, Resource: s.res, Signal: s.sig}
						nSeries++
						for d := 0; d <= days; d++ {
							start := today.AddDate(0, 0, -d)
							m := series.Member(id, start)
							cmds = append(cmds,
								raw.B().Set().Key(series.RollupKeyOf(p, m)).Value(valkey.BinaryString(s.days[(i+d)%8])).Exat(l.RollupExpiry(start)).Build(),
								raw.B().Zadd().Key(series.RollupsKey(p)).ScoreMember().ScoreMember(float64(start.Unix()), m).Build())
						}
					}
				}
				cmds = append(cmds, raw.B().Expire().Key(series.RollupsKey(p)).Seconds(int64(l.TTL().Seconds())).Build())
				for _, res := range raw.DoMulti(ctx, cmds...) {
					if err := res.Error(); err != nil {
						b.Fatal(err)
					}
				}
			}
			var perSeries float64
			for b.Loop() {
				rd := mustReaderB(b, c, l)
				before := heapInUse()
				for _, p := range ps {
					if _, err := rd.Read(ctx, p, now); err != nil {
						b.Fatal(err)
					}
				}
				perSeries = float64(heapInUse()-before) / float64(nSeries)
				runtime.KeepAlive(rd)
			}
			b.ReportMetric(perSeries, "heap-B/series")
			b.ReportMetric(perSeries*60000/(1<<20), "MiB-at-60k-series")
			for _, p := range ps {
				if _, err := c.Purge(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
