package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
)

func pressureReading(at time.Time, stall int64) series.PressureReading {
	return series.PressureReading{Container: "app", Pod: "shop/api-1", Node: "node-1",
		At: at.Truncate(time.Millisecond).UTC(), Interval: 10 * time.Second, StallPerSec: stall, Source: series.PressureSourcePSI}
}

// TestPressureStream: readings of several profiles go out in one batch and come back per
// profile in order; reading resumes after an ID or a time; the stream expires after
// PressureTTL and stays capped near PressureMaxLen; a bad entry is reported, not fatal.
func TestPressureStream(t *testing.T) {
	eachServer(t, func(t *testing.T, ctx context.Context, c *store.Client, _ string) {
		l := series.DefaultLayout(168 * time.Hour)
		p, q := newProfile(), newProfile()
		w, rd := mustWriter(t, c, l), mustReader(t, c, l)
		now := time.Now()
		var want []series.PressureReading
		var batch []store.PressureEntry
		for i := range 3 {
			r := pressureReading(now.Add(time.Duration(i)*10*time.Second), int64(100_000*(i+1)))
			r.Pod = fmt.Sprintf("shop/api-%d", i)
			want = append(want, r)
			batch = append(batch, store.PressureEntry{Profile: p, Reading: r}, store.PressureEntry{Profile: q, Reading: r})
		}
		if err := w.AddPressure(ctx, batch); err != nil {
			t.Fatal(err)
		}
		readings := func(recs []store.PressureRecord) (out []series.PressureReading) {
			for _, r := range recs {
				if r.Err != nil {
					t.Errorf("entry %s: %v", r.ID, r.Err)
				}
				out = append(out, r.Reading)
			}
			return out
		}
		all, err := rd.ReadPressure(ctx, p, "")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, readings(all)); diff != "" {
			t.Errorf("readings (-want +got):\n%s", diff)
		}
		other, err := rd.ReadPressure(ctx, q, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(other) != 3 {
			t.Errorf("second profile holds %d readings, want 3", len(other))
		}
		after, err := rd.ReadPressure(ctx, p, all[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[1:], readings(after)); diff != "" {
			t.Errorf("after the first (-want +got):\n%s", diff)
		}
		// Stream IDs are server times in ms: a time-built ID skips what was added before it.
		ms, _ := strconv.ParseInt(strings.Split(all[2].ID, "-")[0], 10, 64)
		if recs, err := rd.ReadPressure(ctx, p, strconv.FormatInt(ms+1, 10)+"-0"); err != nil || len(recs) != 0 {
			t.Errorf("after a later time: %d readings, %v", len(recs), err)
		}
		if ttl := pttl(t, ctx, c, series.PressureKey(p)); ttl < series.PressureTTL-time.Minute || ttl > series.PressureTTL {
			t.Errorf("pressure stream ttl %v, want about %v", ttl, series.PressureTTL)
		}

		// A hand-written bad entry is returned with its error and the entries after it still come.
		if err := c.Raw().Do(ctx, c.Raw().B().Xadd().Key(series.PressureKey(p)).Id("*").FieldValue().
			FieldValue("container", "app").FieldValue("at", "soon").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := w.AddPressure(ctx, []store.PressureEntry{{Profile: p, Reading: want[0]}}); err != nil {
			t.Fatal(err)
		}
		recs, err := rd.ReadPressure(ctx, p, all[2].ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2 || recs[0].Err == nil || !strings.Contains(recs[0].Err.Error(), `"at"`) || recs[1].Err != nil {
			t.Errorf("bad entry then good one: %+v", recs)
		}

		big := make([]store.PressureEntry, 0, series.PressureMaxLen+500)
		for range series.PressureMaxLen + 500 {
			big = append(big, store.PressureEntry{Profile: p, Reading: want[0]})
		}
		if err := w.AddPressure(ctx, big); err != nil {
			t.Fatal(err)
		}
		n, err := c.Raw().Do(ctx, c.Raw().B().Xlen().Key(series.PressureKey(p)).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if n > series.PressureMaxLen+100 {
			t.Errorf("pressure stream holds %d entries, want at most about %d", n, series.PressureMaxLen)
		}
		bad := []store.PressureEntry{{Profile: p, Reading: want[0]}, {Profile: p, Reading: series.PressureReading{Container: "app"}}}
		if err := w.AddPressure(ctx, bad); err == nil {
			t.Error("AddPressure accepted a reading without a time")
		}
		if err := w.AddPressure(ctx, []store.PressureEntry{{Profile: "NOT-HEX", Reading: want[0]}}); err == nil {
			t.Error("AddPressure accepted a bad profile hash")
		}
	})
}
