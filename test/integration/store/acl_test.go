package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/control/resize"
	"github.com/ballastk8s/ballast/pkg/recommend/feed"
	"github.com/ballastk8s/ballast/pkg/series"
	"github.com/ballastk8s/ballast/pkg/store"
	"github.com/ballastk8s/ballast/test/harness"
)

const (
	adminPassword   = "admin-password"
	agentPassword   = `agent p/a@s:s "w" 'x'` // spaces and quotes survive the command line
	controlPassword = "control-password"
)

// startACLValkey starts a server with the chart's two users (store.AgentACLRules,
// store.ControlACLRules) given as --user lines, the way the chart's Deployment does, and
// the default user kept only for the test's own setup (the chart turns it off).
func startACLValkey(t *testing.T) *harness.Valkey {
	t.Helper()
	args := append([]string{"--user", store.AgentUser, "on", ">" + agentPassword}, store.AgentACLRules()...)
	args = append(append(args, "--user", store.ControlUser, "on", ">"+controlPassword), store.ControlACLRules()...)
	// DEBUG enabled, so that it is the ACL that refuses it.
	v, err := harness.StartValkeyAuth(adminPassword, append(args, "--enable-debug-command", "yes")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	return v
}

func openAs(t *testing.T, url, user, password string) *store.Client {
	t.Helper()
	c, err := store.OpenConfig(store.Config{URL: url, Username: user, Password: password})
	if err != nil {
		t.Fatalf("connecting as %s: %v", user, err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestACLUsers: under its own user the node agent's whole write path (flush, OOM event,
// pressure readings, heartbeat) works and the control plane's reads, compaction, fallback
// writes, store epoch and purge work; the agent credential is refused every other command
// of the server (checked for every command the server knows, with ACL DRYRUN), every key
// outside the ones it writes, and every command a script of its own tries beyond its set.
func TestACLUsers(t *testing.T) {
	v := startACLValkey(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := v.URL()
	agent := openAs(t, url, store.AgentUser, agentPassword)
	l := series.DefaultLayout(24 * time.Hour)
	w, err := store.NewWriter(agent, l)
	if err != nil {
		t.Fatal(err)
	}
	p := newProfile()
	now := time.Now().UTC()
	start := now.Add(-30 * time.Minute).Truncate(l.Window)
	h := &series.Histogram{}
	_ = h.Add(100, start)
	_ = h.Add(110, start.Add(time.Second))
	id := series.SeriesID{Profile: p, Container: "app", Resource: series.ResourceCPU, Signal: series.SignalUsage}
	// Twice: the first call loads the script (EVAL), the second finds it cached (EVALSHA)
	// and takes the existing-window path of the script.
	for i := 0; i < 2; i++ {
		if err := w.Flush(ctx, []series.WindowUpdate{{Series: id, Start: start, Hist: h}}); err != nil {
			t.Fatalf("agent flush %d: %v", i, err)
		}
	}
	if _, err := w.AddOOM(ctx, p, oomEvent(now)); err != nil {
		t.Fatalf("agent OOM event: %v", err)
	}
	if err := w.AddPressure(ctx, []store.PressureEntry{{Profile: p, Reading: pressureReading(now, 5000)}}); err != nil {
		t.Fatalf("agent pressure reading: %v", err)
	}
	hb := series.Heartbeat{Node: "node-acl", Version: "test", Signals: []string{"cpu"},
		Since: now.Add(-time.Minute), Through: now, At: now, TTL: 6 * time.Second}
	if err := w.Heartbeat(ctx, hb); err != nil {
		t.Fatalf("agent heartbeat: %v", err)
	}
	if err := agent.Ping(ctx); err != nil {
		t.Fatalf("agent ping: %v", err)
	}

	// The control plane, under its user, reads (and compacts) what the agent wrote.
	cfg := store.Config{URL: url, Username: store.ControlUser, Password: controlPassword}
	r := store.NewProfileReaderConfig(cfg)
	defer r.Close()
	ps, err := r.Read(ctx, p, now, 24*time.Hour)
	if err != nil {
		t.Fatalf("control read: %v", err)
	}
	if in := feed.Of(ps.Series, ps.OOMs, ps.Nodes); len(in.Containers) != 1 || len(ps.OOMs) != 1 {
		t.Fatalf("control read %d containers, %d OOM events; want 1, 1", len(in.Containers), len(ps.OOMs))
	}
	hbs, _, err := r.Heartbeats(ctx, now)
	if err != nil || hbs["node-acl"].Node != "node-acl" {
		t.Fatalf("control heartbeats = %v, %v", hbs, err)
	}
	if _, err := r.StoreEpoch(ctx, now); err != nil {
		t.Fatalf("control store epoch: %v", err)
	}
	fb := &series.Histogram{}
	_ = fb.Add(120, start.Add(2*time.Second))
	fb.MarkFallback(1, time.Minute)
	if err := r.WriteFallback(ctx, 24*time.Hour, []series.WindowUpdate{{Series: id, Start: start, Hist: fb}},
		map[string]time.Time{"uid-acl": now}); err != nil {
		t.Fatalf("control fallback write: %v", err)
	}
	if _, err := r.FallbackCursors(ctx, []string{"uid-acl"}); err != nil {
		t.Fatalf("control fallback cursors: %v", err)
	}
	streams := resize.NewStoreOOMConfig(cfg)
	defer streams.Close()
	if recs, err := streams.ReadOOM(ctx, p, ""); err != nil || len(recs) != 1 {
		t.Fatalf("control OOM stream = %d records, %v", len(recs), err)
	}
	if recs, err := streams.ReadPressure(ctx, p, ""); err != nil || len(recs) != 1 {
		t.Fatalf("control pressure stream = %d records, %v", len(recs), err)
	}
	control := openAs(t, url, store.ControlUser, controlPassword)
	// The capacity watch (INFO memory and errorstats, the probe write) runs under it too.
	if c, err := control.Capacity(ctx, time.Now()); err != nil || c.UsedBytes == 0 {
		t.Fatalf("control capacity = %+v, %v", c, err)
	}
	if n, err := control.Purge(ctx, p); err != nil || n == 0 {
		t.Fatalf("control purge = %d, %v", n, err)
	}

	// Refused to the agent: administration, reads, keys it does not write, and scripts
	// reaching beyond its set.
	raw := agent.Raw()
	window := series.WindowKey(id, start)
	refused := map[string][]string{
		"FLUSHALL":               {"FLUSHALL"},
		"FLUSHDB":                {"FLUSHDB"},
		"CONFIG SET":             {"CONFIG", "SET", "maxmemory", "1"},
		"CONFIG GET":             {"CONFIG", "GET", "requirepass"},
		"KEYS":                   {"KEYS", "*"},
		"SCAN":                   {"SCAN", "0"},
		"ACL SETUSER":            {"ACL", "SETUSER", store.AgentUser, "+@all"},
		"ACL LIST":               {"ACL", "LIST"},
		"DEBUG":                  {"DEBUG", "SLEEP", "0"},
		"SHUTDOWN":               {"SHUTDOWN", "NOSAVE"},
		"SCRIPT FLUSH":           {"SCRIPT", "FLUSH"},
		"CLIENT LIST":            {"CLIENT", "LIST"},
		"DEL a window":           {"DEL", window},
		"HGETALL a window":       {"HGETALL", window},
		"SET the store epoch":    {"SET", series.StoreEpochKey, "1"},
		"GET the store epoch":    {"GET", series.StoreEpochKey},
		"HSET a profile epoch":   {"HINCRBY", series.EpochKey(p), "n", "1"},
		"HSET a rollup key":      {"HSET", series.RollupKeyOf(p, "x"), "n", "1"},
		"HSET fallback cursors":  {"HSET", series.FallbackCursorKey(), "uid", "1"},
		"HINCRBY outside prefix": {"HINCRBY", "other:key", "n", "1"},
		"EXPIRE outside prefix":  {"EXPIRE", "other:key", "1"},
		"XADD outside prefix":    {"XADD", "other:stream", "*", "a", "b"},
		"PUBLISH":                {"PUBLISH", "ch", "x"},
		"EVAL FLUSHALL":          {"EVAL", "return redis.call('FLUSHALL')", "0"},
		"EVAL DEL a window":      {"EVAL", "return redis.call('DEL', KEYS[1])", "1", window},
		"EVAL outside prefix":    {"EVAL", "return redis.call('HSET', KEYS[1], 'a', 'b')", "1", "other:key"},
	}
	for name, args := range refused {
		err := raw.Do(ctx, raw.B().Arbitrary(args[0]).Args(args[1:]...).Build()).Error()
		if err == nil || !strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "no permissions") {
			t.Errorf("agent %s: err = %v, want NOPERM", name, err)
		}
	}
	if err := agent.Ping(ctx); err != nil {
		t.Fatalf("the agent connection did not survive the refusals: %v", err)
	}

	// The control user never reaches the administrative commands either.
	craw := control.Raw()
	for _, args := range [][]string{{"FLUSHALL"}, {"FLUSHDB"}, {"CONFIG", "SET", "maxmemory", "1"}, {"KEYS", "*"},
		{"ACL", "LIST"}, {"DEBUG", "SLEEP", "0"}, {"SHUTDOWN", "NOSAVE"}, {"SET", "other:key", "1"}} {
		err := craw.Do(ctx, craw.B().Arbitrary(args[0]).Args(args[1:]...).Build()).Error()
		if err == nil || !strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "no permissions") {
			t.Errorf("control %s: err = %v, want NOPERM", strings.Join(args, " "), err)
		}
	}

	// Every command the server knows, asked with ACL DRYRUN: the agent may run exactly its list.
	admin, err := store.OpenConfig(store.Config{URL: url, Password: adminPassword})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	allowed := allowedCommands(t, ctx, admin.Raw(), store.AgentUser)
	// AUTH, HELLO, QUIT and RESET are open to every user (authenticating, leaving).
	want := []string{"auth", "cluster|shards", "cluster|slots", "eval", "evalsha", "expire",
		"expireat", "hello", "hincrby", "hincrbyfloat", "hmget", "hset", "ping", "quit", "reset", "sadd", "xadd"}
	if !slices.Equal(allowed, want) {
		t.Errorf("the agent user may run %v, want exactly %v", allowed, want)
	}
	t.Logf("agent user: %d of the server's %d commands and subcommands allowed: %v", len(allowed), len(allowedCommands(t, ctx, admin.Raw(), "default")), allowed)
	t.Logf("control user: %d allowed", len(allowedCommands(t, ctx, admin.Raw(), store.ControlUser)))
}

// allowedCommands asks ACL DRYRUN, for every command and subcommand the server lists, whether
// user may run it (arguments are padded to the command's arity; a refused key still counts
// as an allowed command).
func allowedCommands(t *testing.T, ctx context.Context, c valkey.Client, user string) []string {
	t.Helper()
	names, err := c.Do(ctx, c.B().Arbitrary("COMMAND", "LIST").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	var allowed []string
	for _, name := range names {
		parts := strings.Split(name, "|")
		info, err := c.Do(ctx, c.B().Arbitrary("COMMAND", "INFO").Args(parts[0]).Build()).ToArray()
		if err != nil || len(info) == 0 {
			t.Fatalf("COMMAND INFO %s: %v", parts[0], err)
		}
		arity := commandArity(t, info[0], parts)
		args := append([]string{}, parts...)
		for len(args) < arity {
			args = append(args, "x")
		}
		reply, err := c.Do(ctx, c.B().Arbitrary("ACL", "DRYRUN").Args(append([]string{user}, args...)...).Build()).ToString()
		if err != nil && strings.Contains(err.Error(), "not found") {
			continue // a container command (CLIENT, CONFIG, ...): its subcommands are listed
		}
		if err != nil {
			t.Fatalf("ACL DRYRUN %s %s: %v", user, name, err)
		}
		if !strings.Contains(reply, "no permissions to run") {
			allowed = append(allowed, strings.ToLower(name))
		}
	}
	sort.Strings(allowed)
	return allowed
}

// commandArity is the absolute arity of the command (or, for "a|b", of its subcommand) in a
// COMMAND INFO entry.
func commandArity(t *testing.T, entry valkey.ValkeyMessage, parts []string) int {
	t.Helper()
	fields, err := entry.ToArray()
	if err != nil || len(fields) < 2 {
		t.Fatalf("COMMAND INFO %s: %v", parts[0], err)
	}
	if len(parts) > 1 && len(fields) > 9 {
		subs, _ := fields[9].ToArray()
		for _, s := range subs {
			sf, err := s.ToArray()
			if err != nil || len(sf) < 2 {
				continue
			}
			if n, _ := sf[0].ToString(); strings.EqualFold(n, strings.Join(parts, "|")) {
				a, _ := sf[1].AsInt64()
				return int(max(a, -a))
			}
		}
	}
	a, _ := fields[1].AsInt64()
	return int(max(a, -a))
}

// TestStreamsPasswordRotated: the resize controller's OOM and pressure stream source (the
// fast raises) drops its connection when the store refuses the rotated password and
// reconnects once the mounted file holds the new one, as the profile reader does.
func TestStreamsPasswordRotated(t *testing.T) {
	v, err := harness.StartValkeyAuth("first-password")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	file := writeFile(t, "password", "first-password")
	s := resize.NewStoreOOMConfig(store.Config{URL: v.URL(), PasswordFile: file})
	defer s.Close()
	p := newProfile()
	if _, err := s.ReadOOM(ctx, p, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Do("CONFIG", "SET", "requirepass", "second-password"); err != nil {
		t.Fatal(err)
	}
	v.Password = "second-password"
	if _, err := v.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 10*time.Second, "the old password refused", func() error {
		if _, err := s.ReadOOM(ctx, p, ""); err == nil {
			return errString("read still succeeds")
		}
		return nil
	})
	if err := os.WriteFile(file, []byte("second-password"), 0o600); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 10*time.Second, "OOM stream read with the rotated password", func() error {
		_, err := s.ReadOOM(ctx, p, "")
		return err
	})
	harness.Eventually(t, 10*time.Second, "pressure stream read with the rotated password", func() error {
		_, err := s.ReadPressure(ctx, p, "")
		if err != nil {
			return fmt.Errorf("pressure: %w", err)
		}
		return nil
	})
}
