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

// luaOps is shared by the scripts: OPS maps every stat field to its op from series.StatOps
// (fields not listed are bucket counters, which add), num formats a number for a hash field
// (integers plainly, other values with 17 significant digits, which read back as the same
// float64), and merge combines a flat field/value reply into a table of numbers. Every op
// commutes.
var luaOps = func() string {
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
	b.WriteString(`local function num(v)
  if v == math.floor(v) and math.abs(v) < 1e15 then return string.format('%d', v) end
  return string.format('%.17g', v)
end
local function merge(t, h)
  for j = 1, #h - 1, 2 do
    local f, v = h[j], tonumber(h[j + 1])
    local cur, op = t[f], OPS[f] or 'a'
    if v == nil then
    elseif cur == nil then t[f] = v
    elseif op == 'a' or op == 'f' then t[f] = cur + v
    elseif (op == '<' and v < cur) or (op == '>' and v > cur) then t[f] = v
    end
  end
end
`)
	return b.String()
}()

// addScript adds the locally aggregated windows of one profile to their hashes and records
// them, with as few commands as the updates allow: the count goes first, and when it shows
// that the window is new, its extremes are set and its expiry given in one go; otherwise one
// HMGET reads the extremes and one HSET writes those that moved. The pending set and the
// series index are updated once per call, and their expiry refreshed only when they gained a
// window or a newer window start (at least once per window width for a written series).
// Each window is applied under redis.pcall, so a window the server refuses (a foreign key
// of another type) fails alone and is not recorded in the pending set or the index.
//
//	KEYS[1] series index   KEYS[2] pending set   KEYS[3..] window hashes
//	ARGV[1] TTL of profile keys (s), then per window: member, series token, window start,
//	window expiry (unix s), number of field/value pairs, the pairs (the count first)
//
// Reply: one element per window, 1 when applied, else the error text.
var addScript = newScript(luaOps + `
local ttl, a = ARGV[1], 2
local res, members, newest, tokens = {}, {}, {}, {}
for k = 3, #KEYS do
  local key = KEYS[k]
  local member, token, start, expiry, np = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3], tonumber(ARGV[a + 4])
  local f0 = a + 5
  a = f0 + 2 * np
  local r = redis.pcall('HINCRBY', key, ARGV[f0], ARGV[f0 + 1])
  if type(r) == 'table' and r.err then
    res[#res + 1] = r.err
  else
    local fresh = (r == tonumber(ARGV[f0 + 1]))
    local keep, failed = {}, nil
    for i = f0 + 2, a - 1, 2 do
      local f, v = ARGV[i], ARGV[i + 1]
      local op = OPS[f] or 'a'
      if op == 'a' then r = redis.pcall('HINCRBY', key, f, v)
      elseif op == 'f' then r = redis.pcall('HINCRBYFLOAT', key, f, v)
      else keep[#keep + 1] = f; keep[#keep + 1] = v; r = nil end
      if type(r) == 'table' and r.err then failed = r.err; break end
    end
    if not failed and #keep > 0 then
      if fresh then
        redis.call('HSET', key, unpack(keep))
        redis.call('EXPIREAT', key, expiry)
      else
        local names = {}
        for i = 1, #keep, 2 do names[#names + 1] = keep[i] end
        local cur = redis.call('HMGET', key, unpack(names))
        local set = {}
        for j = 1, #names do
          local v, c, op = tonumber(keep[2 * j]), tonumber(cur[j]), OPS[names[j]]
          if c == nil or (op == '<' and v < c) or (op == '>' and v > c) then
            set[#set + 1] = names[j]; set[#set + 1] = keep[2 * j]
          end
        end
        if #set > 0 then redis.call('HSET', key, unpack(set)) end
      end
    end
    if failed then
      res[#res + 1] = failed
    else
      res[#res + 1] = 1
      members[#members + 1] = member
      if newest[token] == nil then tokens[#tokens + 1] = token; newest[token] = start
      elseif start > newest[token] then newest[token] = start end
    end
  end
end
if #members > 0 then
  if redis.call('SADD', KEYS[2], unpack(members)) > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
  local cur = redis.call('HMGET', KEYS[1], unpack(tokens))
  local set = {}
  for j = 1, #tokens do
    local c = tonumber(cur[j])
    if c == nil or c < newest[tokens[j]] then
      set[#set + 1] = tokens[j]; set[#set + 1] = string.format('%d', newest[tokens[j]])
    end
  end
  if #set > 0 then
    redis.call('HSET', KEYS[1], unpack(set))
    redis.call('EXPIRE', KEYS[1], ttl)
  end
end
return res
`)

// compactScript folds closed windows into their rollups. The reader has already read the
// windows and merged each rollup's share in Go; the script checks that every window still
// holds the count the reader saw — a late flush or another reader's compaction changes it —
// and only then writes the rollup and deletes the windows, all in one atomic step. A group
// whose windows changed is skipped and stays pending for the next read, so no sample is ever
// lost or counted twice, and Valkey's one thread never parses a window twice.
//
// A group comes in one of three forms. 'f' (full) carries the whole new rollup: the reader
// merged the rollup it holds in its cache with the windows, which is exact when no other
// reader compacted since the reader last looked — the epoch is the one it expects — so the
// script only writes it (no read, no merge in Lua: a backlog's compaction is bounded by this
// thread). If the epoch moved, an 'f' group is skipped and the reader reloads. 'n' (new) is
// a rollup the reader's cache does not have, so its whole content is the windows' samples:
// written as is when the rollup does not exist, else added to it. 'd' (delta) carries the
// windows' merged samples to add to the stored rollup (the reader's cache does not hold
// rollups that left the retention window).
//
// It also drops pending entries whose window expired (rebuilding the pending set in its
// compact encoding once a backlog has drained), and, when it compacted anything, bumps the
// epoch and drops expired entries from the rollup set and the index.
//
//	KEYS[1] epoch  KEYS[2] pending set  KEYS[3] rollup set  KEYS[4] series index
//	KEYS[5..] per group: the rollup hash, then its window hashes
//	ARGV[1] rollup lifetime past its start (s)  ARGV[2] TTL of profile keys (s)
//	ARGV[3] drop rollup-set entries starting before this  ARGV[4] drop index entries older than this
//	ARGV[5] the epoch the reader expects  ARGV[6] number of expired pending members, then
//	those members, then per group: rollup member, rollup start, form ('f', 'n' or 'd'), number of
//	windows, (member, count) per window, number of field/value pairs, the pairs
//
// Reply: {epoch before, epoch after, {rollup member, hash, ...} of changed rollups (the hash
// empty when the pairs sent were written as they are: the reader has them), number of windows compacted, {rollup member,
// ...} of skipped groups}.
var compactScript = newScript(luaOps + `
local before = tonumber(redis.call('GET', KEYS[1]) or '0')
local current = (before == tonumber(ARGV[5]))
local a = 6
local srems, dels, zadd, out, skipped = {}, {}, {}, {}, {}
local ngone = tonumber(ARGV[a]); a = a + 1
for i = 1, ngone do srems[#srems + 1] = ARGV[a]; a = a + 1 end
local k, compacted = 5, 0
while k <= #KEYS do
  local rkey = KEYS[k]
  local rmember, rstart, form, nw = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  a = a + 4
  local ok = current or form ~= 'f'
  if ok then
    for j = 1, nw do
      local n = redis.call('HGET', KEYS[k + j], 'n')
      if n ~= ARGV[a + 2 * (j - 1) + 1] then ok = false; break end
    end
  end
  local np = tonumber(ARGV[a + 2 * nw])
  local d0 = a + 2 * nw + 1
  if ok then
    for j = 1, nw do
      dels[#dels + 1] = KEYS[k + j]
      srems[#srems + 1] = ARGV[a + 2 * (j - 1)]
    end
    if form == 'n' and redis.call('EXISTS', rkey) == 1 then form = 'd' end
    if form ~= 'd' then
      redis.call('HSET', rkey, unpack(ARGV, d0, d0 + 2 * np - 1))
      out[#out + 1] = rmember
      out[#out + 1] = {}
    else
      local t = {}
      merge(t, redis.call('HGETALL', rkey))
      local delta = {}
      for i = d0, d0 + 2 * np - 1 do delta[#delta + 1] = ARGV[i] end
      merge(t, delta)
      local flat = {}
      for f, v in pairs(t) do flat[#flat + 1] = f; flat[#flat + 1] = num(v) end
      redis.call('HSET', rkey, unpack(flat))
      out[#out + 1] = rmember
      out[#out + 1] = flat
    end
    redis.call('EXPIREAT', rkey, tonumber(rstart) + tonumber(ARGV[1]))
    zadd[#zadd + 1] = rstart
    zadd[#zadd + 1] = rmember
    compacted = compacted + nw
  else
    skipped[#skipped + 1] = rmember
  end
  a = d0 + 2 * np
  k = k + 1 + nw
end
if #dels > 0 then redis.call('DEL', unpack(dels)) end
if #srems > 0 then
  redis.call('SREM', KEYS[2], unpack(srems))
  -- A pending set that outgrew the compact encoding (a backlog) keeps its hash table once
  -- it shrinks: rebuild it when it is small again.
  if redis.call('SCARD', KEYS[2]) <= 32 and redis.call('OBJECT', 'ENCODING', KEYS[2]) == 'hashtable' then
    local left = redis.call('SMEMBERS', KEYS[2])
    redis.call('DEL', KEYS[2])
    redis.call('SADD', KEYS[2], unpack(left))
    redis.call('EXPIRE', KEYS[2], ARGV[2])
  end
end
local after = before
if compacted > 0 then
  redis.call('ZADD', KEYS[3], unpack(zadd))
  after = redis.call('INCR', KEYS[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[3], ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[3])
  local idx = redis.call('HGETALL', KEYS[4])
  for j = 1, #idx - 1, 2 do
    if tonumber(idx[j + 1]) < tonumber(ARGV[4]) then redis.call('HDEL', KEYS[4], idx[j]) end
  end
end
return {before, after, out, compacted, skipped}
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

// cmd is the EVALSHA command of one call.
func (s *script) cmd(c valkey.Client, call scriptCall) valkey.Completed {
	return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(call.keys))).Key(call.keys...).Arg(call.args...).Build()
}

// run pipelines the calls in one DoMulti (one round trip per node) and re-sends, as EVAL,
// only the calls a node answered with NOSCRIPT: those did not run, so nothing is applied
// twice. It returns the results in call order and the number of commands sent.
func (s *script) run(ctx context.Context, c valkey.Client, calls []scriptCall) ([]valkey.ValkeyResult, int) {
	cmds := make(valkey.Commands, len(calls))
	for i, call := range calls {
		cmds[i] = s.cmd(c, call)
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
