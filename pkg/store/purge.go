package store

import (
	"context"
	"fmt"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// purgeBatch is the number of keys deleted by one DEL.
const purgeBatch = 256

// Purge deletes every key of a profile: its index, pending set, windows, rollups, rollup
// set, epoch, OOM stream and pressure stream. The keys are enumerated from the profile's own sets (every
// window is in the pending set and every rollup in the rollup set from the moment it is
// written), so no keyspace scan is needed; all of them share the profile's hash tag, so in
// cluster mode each DEL targets the one slot that holds the profile. Windows a writer adds
// while Purge runs survive it and expire on their own. It returns the number of keys
// deleted.
func (c *Client) Purge(ctx context.Context, profile string) (int64, error) {
	if err := series.CheckProfile(profile); err != nil {
		return 0, fmt.Errorf("purging profile: %w", err)
	}
	res := c.c.DoMulti(ctx,
		c.c.B().Smembers().Key(series.PendingKey(profile)).Build(),
		c.c.B().Zrange().Key(series.RollupsKey(profile)).Min("0").Max("-1").Build())
	pending, err := res[0].AsStrSlice()
	if err != nil {
		return 0, fmt.Errorf("purging profile %s: listing windows: %w", profile, err)
	}
	rollups, err := res[1].AsStrSlice()
	if err != nil {
		return 0, fmt.Errorf("purging profile %s: listing rollups: %w", profile, err)
	}
	keys := make([]string, 0, len(pending)+2*len(rollups)+7)
	for _, m := range pending {
		keys = append(keys, series.WindowKeyOf(profile, m))
	}
	for _, m := range rollups {
		keys = append(keys, series.RollupKeyOf(profile, m), series.LegacyRollupKeyOf(profile, m))
	}
	// The sets themselves go last, so a failed purge can be repeated.
	keys = append(keys, series.IndexKey(profile), series.EpochKey(profile), series.OOMKey(profile), series.PressureKey(profile), series.BackfillKey(profile),
		series.RollupsKey(profile), series.PendingKey(profile))
	var cmds valkey.Commands
	for lo := 0; lo < len(keys); lo += purgeBatch {
		cmds = append(cmds, c.c.B().Del().Key(keys[lo:min(lo+purgeBatch, len(keys))]...).Build())
	}
	var deleted int64
	for _, r := range c.c.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if err != nil {
			return deleted, fmt.Errorf("purging profile %s: %w", profile, err)
		}
		deleted += n
	}
	return deleted, nil
}
