package store

import "github.com/ballastk8s/ballast/pkg/series"

// The Valkey ACL users the chart creates, one per identity. The rules below are the
// contract: the chart renders the same lists (a chart test compares them), and a test
// against a real valkey-server checks that each binary's whole command set runs under its
// user and that everything else is refused.
const (
	// AgentUser is the node agents' ACL user.
	AgentUser = "ballast-agent"
	// ControlUser is the control plane's ACL user.
	ControlUser = "ballast-control"
)

// AgentACLRules are the agent user's rules (after "on" and its password): the keys it
// writes (every profile's windows, series index, pending set, OOM and pressure streams,
// and the heartbeats hash; not the rollups, the epochs or the fallback cursors), no
// channels, and exactly the commands it sends: the keep-alive PING (HELLO and AUTH are open
// to every user; the client's CLIENT SETINFO is refused and ignored), the flush script (EVALSHA, EVAL when the script is not cached yet) and the commands the
// script runs, XADD for the streams, HSET and EXPIRE for the heartbeat, and the cluster
// topology reads. A script runs with the caller's permissions, so the commands it calls
// are checked against this list too.
func AgentACLRules() []string {
	p := series.KeyPrefix + ":{*}:"
	return []string{
		"resetkeys",
		"~" + p + "w:*", "~" + p + "series", "~" + p + "pending", "~" + p + "oom", "~" + p + "pressure",
		"~" + series.HeartbeatsKey(),
		"resetchannels",
		"-@all",
		"+ping",
		"+cluster|slots", "+cluster|shards",
		"+evalsha", "+eval",
		"+hincrby", "+hincrbyfloat", "+hset", "+hmget", "+sadd", "+expire", "+expireat",
		"+xadd",
	}
}

// ControlACLRules are the control-plane user's rules: every key under Ballast's prefix,
// no channels, every command except the dangerous and administrative ones (FLUSHALL,
// FLUSHDB, CONFIG, ACL, KEYS, DEBUG, SHUTDOWN, MONITOR, ...), which it never sends: purge
// enumerates a profile's keys from its own sets, and nothing scans the keyspace. INFO
// (itself in @dangerous) is allowed back: the capacity watch reads its memory and
// errorstats sections (capacity.go).
func ControlACLRules() []string {
	return []string{
		"resetkeys",
		"~" + series.KeyPrefix + ":*",
		"resetchannels",
		"+@all", "-@dangerous", "-@admin", "+info",
		"-flushall", "-flushdb", "-config", "-acl", "-keys", "-debug", "-script|flush", "-script|kill",
	}
}
