package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Agent presence and the fallback source's bookkeeping (series.HeartbeatsKey and
// series.FallbackCursorKey). Node agents write heartbeats through their Writer; the control
// plane reads them and writes fallback windows through the same Writer type, so the store
// keeps one writer of series windows.

// heartbeatKeep is how long a heartbeat record stays in the hash after it was written. The
// record outlives its TTL on purpose: its Through tells the fallback where the agent's
// samples end. Older records are dropped by the reader.
const heartbeatKeep = time.Hour

// Heartbeat records hb in the heartbeats hash and refreshes the hash's expiry.
func (w *Writer) Heartbeat(ctx context.Context, hb series.Heartbeat) error {
	enc, err := hb.Encode()
	if err != nil {
		return fmt.Errorf("writing heartbeat: %w", err)
	}
	call := scriptCall{keys: []string{series.HeartbeatsKey()},
		args: []string{hb.Node, enc, strconv.FormatInt(int64(heartbeatKeep.Seconds()), 10)}}
	res, _ := heartbeatScript.run(ctx, w.c, []scriptCall{call})
	if err := res[0].Error(); err != nil {
		return fmt.Errorf("writing heartbeat of %s: %w", hb.Node, err)
	}
	return nil
}

// heartbeatScript replaces a node's heartbeat and refreshes the key's expiry. It runs with
// flags=allow-oom: a heartbeat replaces one record of the same size, and a store at its
// maxmemory (refusing the agent's windows) must not also make every node look gone, which
// would move their pods to the fallback source and flip every profile's AgentCoverage.
//
//	KEYS[1] heartbeats  ARGV[1] node  ARGV[2] record  ARGV[3] expiry (s)
var heartbeatScript = newScript(`#!lua flags=allow-oom
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`)

// Heartbeats reads every node agent's newest heartbeat, live or not, keyed by node. Records
// that cannot be decoded are skipped and returned in bad (by node) so the caller can say so
// once; records older than an hour are deleted.
func (s *ProfileReader) Heartbeats(ctx context.Context, now time.Time) (hbs map[string]series.Heartbeat, bad map[string]error, err error) {
	c, err := s.lazy.connected()
	if err != nil {
		return nil, nil, err
	}
	vc := c.c
	m, err := vc.Do(ctx, vc.B().Hgetall().Key(series.HeartbeatsKey()).Build()).AsStrMap()
	if err != nil {
		return nil, nil, fmt.Errorf("reading heartbeats: %w", err)
	}
	hbs, bad = make(map[string]series.Heartbeat, len(m)), map[string]error{}
	var stale []string
	for node, v := range m {
		hb, err := series.DecodeHeartbeat(node, v)
		if err != nil {
			bad[node] = err
			continue
		}
		if now.Sub(hb.At) > heartbeatKeep {
			stale = append(stale, node)
			continue
		}
		hbs[node] = hb
	}
	if len(stale) > 0 {
		_ = vc.Do(ctx, vc.B().Hdel().Key(series.HeartbeatsKey()).Field(stale...).Build()).Error()
	}
	return hbs, bad, nil
}

// FallbackCursors returns, per pod UID asked for, the time of the newest fallback sample
// written for it (absent: none).
func (s *ProfileReader) FallbackCursors(ctx context.Context, uids []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(uids) == 0 {
		return out, nil
	}
	c, err := s.lazy.connected()
	if err != nil {
		return nil, err
	}
	vc := c.c
	vals, err := vc.Do(ctx, vc.B().Hmget().Key(series.FallbackCursorKey()).Field(uids...).Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("reading fallback cursors: %w", err)
	}
	for i, v := range vals {
		str, err := v.ToString()
		if err != nil {
			continue // nil: no cursor
		}
		ms, err := strconv.ParseInt(str, 10, 64)
		if err != nil {
			continue
		}
		out[uids[i]] = time.UnixMilli(ms).UTC()
	}
	return out, nil
}

// WriteFallback adds fallback windows to the store (one Flush, the agents' write path) and
// then advances the cursors of the pods they came from. A window whose write failed leaves
// the cursors unchanged, so its samples are offered again rather than lost; cursors never
// move backwards (the script keeps the larger value).
func (s *ProfileReader) WriteFallback(ctx context.Context, retention time.Duration, ups []series.WindowUpdate, cursors map[string]time.Time) error {
	w, err := s.lazy.Writer(series.DefaultLayout(retention))
	if err != nil {
		return err
	}
	if err := w.Flush(ctx, ups); err != nil {
		return err
	}
	if len(cursors) == 0 {
		return nil
	}
	args := make([]string, 0, 2*len(cursors))
	for uid, t := range cursors {
		args = append(args, uid, strconv.FormatInt(t.UnixMilli(), 10))
	}
	ttl := strconv.FormatInt(int64(series.DefaultLayout(retention).TTL().Seconds()), 10)
	err = w.c.Do(ctx, w.c.B().Eval().Script(cursorScript).Numkeys(1).Key(series.FallbackCursorKey()).
		Arg(append([]string{ttl}, args...)...).Build()).Error()
	if err != nil && !errors.Is(err, valkey.Nil) {
		return fmt.Errorf("advancing fallback cursors: %w", err)
	}
	return nil
}

// cursorScript keeps, per pod UID, the larger of the stored and the given time.
//
//	KEYS[1] cursor hash  ARGV[1] TTL (s)  ARGV[2..] uid, unix ms pairs
const cursorScript = `
for i = 2, #ARGV - 1, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if not cur or tonumber(cur) < tonumber(ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
`

// ForgetFallbackCursors deletes the cursors of pods that are gone.
func (s *ProfileReader) ForgetFallbackCursors(ctx context.Context, uids []string) error {
	if len(uids) == 0 {
		return nil
	}
	c, err := s.lazy.connected()
	if err != nil {
		return err
	}
	return c.c.Do(ctx, c.c.B().Hdel().Key(series.FallbackCursorKey()).Field(uids...).Build()).Error()
}
