package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/ballastk8s/ballast/pkg/series"
)

// Server-side scripts. Every key a script touches is passed in KEYS and carries the
// profile's hash tag, so each call runs on one cluster slot. A script runs atomically: a
// reader never sees half of a window update or half of a compaction.

// luaMerge is shared by the scripts: apply(key, field, value) combines one wire field into a
// hash with the field's op from series.StatOps (bucket counters add). Every op commutes.
var luaMerge = func() string {
	ops := series.StatOps()
	names := make([]string, 0, len(ops))
	for f := range ops {
		names = append(names, f)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("local OPS = {")
	for _, f := range names {
		b.WriteString("['" + f + "']='" + string(ops[f]) + "',")
	}
	b.WriteString("}\n")
	b.WriteString(`local function apply(key, f, v)
  local op = OPS[f] or 'a'
  if op == 'a' then
    redis.call('HINCRBY', key, f, v)
  elseif op == 'f' then
    redis.call('HINCRBYFLOAT', key, f, v)
  else
    local cur = redis.call('HGET', key, f)
    if not cur then
      redis.call('HSET', key, f, v)
    else
      local a, b = tonumber(cur), tonumber(v)
      if (op == '<' and b < a) or (op == '>' and b > a) then
        redis.call('HSET', key, f, v)
      end
    end
  end
end
`)
	return b.String()
}()

// addScript adds one locally aggregated window to its hash and records it.
//
//	KEYS[1] window hash   KEYS[2] series index   KEYS[3] pending set
//	ARGV[1] member  ARGV[2] series token  ARGV[3] window start  ARGV[4] window expiry (unix s)
//	ARGV[5] TTL of profile keys (s)  ARGV[6..] wire field/value pairs
var addScript = newScript(luaMerge + `
for i = 6, #ARGV - 1, 2 do apply(KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIREAT', KEYS[1], ARGV[4])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[5])
local newest = redis.call('HGET', KEYS[2], ARGV[2])
if not newest or tonumber(newest) < tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
end
redis.call('EXPIRE', KEYS[2], ARGV[5])
return 1
`)

// syncScript returns the pending windows of a profile that are still open, folds the closed
// ones into their rollups (merge, delete the window, bump the epoch) and returns the rollups
// it changed, all in one atomic step. It also drops expired entries from the rollup set and
// the series index.
//
//	KEYS[1] epoch  KEYS[2] pending set  KEYS[3] rollup set  KEYS[4] series index
//	KEYS[5..] window hash, rollup hash (one pair per pending window)
//	ARGV[1] windows starting before this are closed (unix s)
//	ARGV[2] rollup lifetime past its start (s)  ARGV[3] TTL of profile keys (s)
//	ARGV[4] drop rollup-set entries starting before this  ARGV[5] drop index entries older than this
//	ARGV[6..] member, rollup member, rollup start, window start (one quadruple per pair)
//
// Reply: {epoch before, epoch after, {member, hash, ...} of open windows,
// {rollup member, hash, ...} of changed rollups, number of windows compacted}.
var syncScript = newScript(luaMerge + `
local before = tonumber(redis.call('GET', KEYS[1]) or '0')
local open, rolled, seen = {}, {}, {}
local compacted = 0
for i = 5, #KEYS - 1, 2 do
  local a = 6 + (i - 5) * 2
  local member, rmember, rstart, wstart = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local h = redis.call('HGETALL', KEYS[i])
  if #h == 0 then
    redis.call('SREM', KEYS[2], member)
  elseif tonumber(wstart) < tonumber(ARGV[1]) then
    for j = 1, #h - 1, 2 do apply(KEYS[i + 1], h[j], h[j + 1]) end
    redis.call('EXPIREAT', KEYS[i + 1], tonumber(rstart) + tonumber(ARGV[2]))
    redis.call('ZADD', KEYS[3], rstart, rmember)
    redis.call('DEL', KEYS[i])
    redis.call('SREM', KEYS[2], member)
    if not seen[rmember] then
      seen[rmember] = KEYS[i + 1]
      rolled[#rolled + 1] = rmember
    end
    compacted = compacted + 1
  else
    open[#open + 1] = member
    open[#open + 1] = h
  end
end
local after = before
if compacted > 0 then
  after = redis.call('INCR', KEYS[1])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  redis.call('EXPIRE', KEYS[3], ARGV[3])
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[4])
local idx = redis.call('HGETALL', KEYS[4])
for j = 1, #idx - 1, 2 do
  if tonumber(idx[j + 1]) < tonumber(ARGV[5]) then redis.call('HDEL', KEYS[4], idx[j]) end
end
local out = {}
for _, m in ipairs(rolled) do
  out[#out + 1] = m
  out[#out + 1] = redis.call('HGETALL', seen[m])
end
return {before, after, open, out, compacted}
`)

// script is a Lua script sent by its SHA-1 (EVALSHA), falling back to its source (EVAL) on
// the nodes that do not have it cached yet.
type script struct {
	src, sha string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

type scriptCall struct {
	keys, args []string
}

// run pipelines the calls in one DoMulti (one round trip per node) and re-sends, as EVAL,
// only the calls a node answered with NOSCRIPT: those did not run, so nothing is applied
// twice. It returns the results in call order and the number of commands sent.
func (s *script) run(ctx context.Context, c valkey.Client, calls []scriptCall) ([]valkey.ValkeyResult, int) {
	cmds := make(valkey.Commands, len(calls))
	for i, call := range calls {
		cmds[i] = c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(call.keys))).Key(call.keys...).Arg(call.args...).Build()
	}
	res := c.DoMulti(ctx, cmds...)
	sent := len(cmds)
	var retry []int
	for i, r := range res {
		if verr, ok := valkey.IsValkeyErr(r.Error()); ok && verr.IsNoScript() {
			retry = append(retry, i)
		}
	}
	if len(retry) == 0 {
		return res, sent
	}
	cmds = make(valkey.Commands, len(retry))
	for k, i := range retry {
		call := calls[i]
		cmds[k] = c.B().Eval().Script(s.src).Numkeys(int64(len(call.keys))).Key(call.keys...).Arg(call.args...).Build()
	}
	for k, r := range c.DoMulti(ctx, cmds...) {
		res[retry[k]] = r
	}
	return res, sent + len(cmds)
}
