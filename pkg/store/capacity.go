package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Capacity is how full the store's memory is (INFO memory), taken from the fullest server
// of a cluster.
type Capacity struct {
	// Addr is the server the figures come from.
	Addr string
	// UsedBytes is used_memory; CountedBytes is what maxmemory is checked against
	// (used_memory less mem_not_counted_for_evict: replication and AOF buffers).
	UsedBytes, CountedBytes int64
	// MaxBytes is maxmemory; 0 means no limit.
	MaxBytes int64
	// Policy is maxmemory_policy (Ballast's chart sets noeviction: keys must never be
	// evicted, so a full store refuses writes).
	Policy string
	// Refused: a probe write was answered with the server's out-of-memory error, so every
	// agent flush is refused too.
	Refused bool
	// OOMErrors is how many commands the servers have refused for lack of memory since
	// they started (INFO errorstats errorstat_OOM, summed over the servers). A large
	// command (an agent's pipelined flush) can be refused while a tiny probe still fits:
	// the server counts the command's own arguments against maxmemory.
	OOMErrors int64
}

// Ratio is CountedBytes / MaxBytes (0 without a limit).
func (c Capacity) Ratio() float64 {
	if c.MaxBytes <= 0 {
		return 0
	}
	return float64(c.CountedBytes) / float64(c.MaxBytes)
}

// IsStoreFull reports whether err is (or wraps) the server's answer to a write refused
// because used memory is over maxmemory: "OOM command not allowed when used memory >
// 'maxmemory'". Such a write was not applied, so retrying it later counts nothing twice.
func IsStoreFull(err error) bool {
	if err == nil {
		return false
	}
	var ve *valkey.ValkeyError
	if errors.As(err, &ve) && strings.HasPrefix(ve.Error(), "OOM ") {
		return true
	}
	// A script's per-window answer comes back as text (Writer.Flush: "refused: OOM ...").
	return strings.Contains(err.Error(), "OOM command not allowed")
}

// Capacity reads INFO memory from every server (a cluster's masters) and returns the
// fullest, with the out-of-memory refusals of all of them (INFO errorstats), then probes whether writes are refused: SET of the store epoch key with NX,
// which changes nothing when the key exists (and writes the epoch StoreEpoch would write
// when it does not) but is refused like any write while the server is out of memory.
// The connection's user needs INFO and SET on the epoch key. When INFO fails, the error is
// returned with what was learnt (Refused is set whenever the probe was refused).
func (c *Client) Capacity(ctx context.Context, now time.Time) (Capacity, error) {
	var out Capacity
	var errs []error
	first := true
	for addr, n := range c.c.Nodes() {
		cp, err := infoMemory(ctx, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading INFO memory of %s: %w", addr, err))
			continue
		}
		cp.Addr = addr
		if first || fuller(cp, out) {
			oom := out.OOMErrors
			out, first = cp, false
			out.OOMErrors = oom
		}
		out.OOMErrors += oomErrors(ctx, n)
	}
	// The probe runs even when INFO is denied: a refused write alone says the store is full.
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	err := c.c.Do(ctx, c.c.B().Set().Key(series.StoreEpochKey).Value(ms).Nx().Build()).Error()
	switch {
	case err == nil, valkey.IsValkeyNil(err):
	case IsStoreFull(err):
		out.Refused = true
	default:
		errs = append(errs, fmt.Errorf("probing whether the store accepts writes: %w", err))
	}
	return out, errors.Join(errs...)
}

func infoMemory(ctx context.Context, n valkey.Client) (Capacity, error) {
	txt, err := n.Do(ctx, n.B().Info().Section("memory").Build()).ToString()
	if err != nil {
		return Capacity{}, err
	}
	return ParseInfoMemory(txt)
}

// oomErrors reads errorstat_OOM from INFO errorstats (0 when the server has no such
// section or never refused a command).
func oomErrors(ctx context.Context, n valkey.Client) int64 {
	txt, err := n.Do(ctx, n.B().Info().Section("errorstats").Build()).ToString()
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(txt, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "errorstat_OOM:count="); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return 0
}

// fuller: a is closer to its limit than b (a limited server before an unlimited one).
func fuller(a, b Capacity) bool {
	if (a.MaxBytes > 0) != (b.MaxBytes > 0) {
		return a.MaxBytes > 0
	}
	if a.MaxBytes > 0 {
		return a.Ratio() > b.Ratio()
	}
	return a.UsedBytes > b.UsedBytes
}

// ParseInfoMemory reads the fields Capacity needs from an INFO memory reply.
func ParseInfoMemory(txt string) (Capacity, error) {
	var cp Capacity
	var notCounted int64
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(txt))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "used_memory":
			dst = &cp.UsedBytes
		case "maxmemory":
			dst = &cp.MaxBytes
		case "mem_not_counted_for_evict":
			dst = &notCounted
		case "maxmemory_policy":
			cp.Policy = v
			seen[k] = true
			continue
		default:
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Capacity{}, fmt.Errorf("field %s: %q is not a byte count", k, v)
		}
		*dst = n
		seen[k] = true
	}
	for _, k := range []string{"used_memory", "maxmemory"} {
		if !seen[k] {
			return Capacity{}, fmt.Errorf("no %s field in INFO memory", k)
		}
	}
	cp.CountedBytes = max(cp.UsedBytes-notCounted, 0)
	return cp, nil
}

// Capacity is Client.Capacity on the lazily opened connection.
func (s *ProfileReader) Capacity(ctx context.Context, now time.Time) (Capacity, error) {
	c, err := s.lazy.connected()
	if err != nil {
		return Capacity{}, err
	}
	cp, err := c.Capacity(ctx, now)
	return cp, s.lazy.Check(err)
}
