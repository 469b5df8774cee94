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

// luaOps is addScript's table of ops: OPS maps every stat field to its op from
// series.StatOps (fields not listed are bucket counters, which add). Every op commutes.
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
// windows and merged each rollup in Go; the script checks that every window still holds the
// count the reader saw — a late flush or another reader's compaction changes it — and only
// then writes the rollup and deletes the windows, all in one atomic step. A group whose
// windows changed is skipped and stays pending for the next read, so no sample is ever lost
// or counted twice, and Valkey's one thread never parses a window twice.
//
// A rollup is one string, the reader's packed histogram (series.Packed.AppendBinary), so
// the script never merges: it writes what the reader sends. A group comes in one of three
// forms. 'f' (full) is the rollup the reader holds in its cache merged with the windows;
// 'n' (new) is a rollup the cache does not have, so the windows' samples are all of it.
// Both are exact only when no other reader compacted since this one last looked, so both
// are skipped when the epoch is not the one the reader expects (it then reloads), and an
// 'n' group whose rollup exists after all (it outlived the rollup set that listed it) is
// listed again, skipped and counted stale, and the reader reloads it and merges into it.
// 'x' (expired) is windows of a rollup that starts before the retention cutoff: no read
// will ever see that rollup again, so its windows are deleted and nothing is written.
// Writing a rollup deletes the hash the same rollup had before rollups were packed.
//
// It also drops pending entries whose window expired (rebuilding the pending set in its
// compact encoding once a backlog has drained), and, when it compacted anything, bumps the
// epoch and drops expired entries from the rollup set and the index.
//
//	KEYS[1] epoch  KEYS[2] pending set  KEYS[3] rollup set  KEYS[4] series index
//	KEYS[5..] per group: the rollup, the rollup's former hash, then its window hashes
//	ARGV[1] rollup lifetime past its start (s)  ARGV[2] TTL of profile keys (s)
//	ARGV[3] drop rollup-set entries starting before this  ARGV[4] drop index entries older than this
//	ARGV[5] the epoch the reader expects  ARGV[6] number of expired pending members, then
//	those members, then per group: rollup member, rollup start, form ('f', 'n' or 'x'), number of
//	windows, (member, count) per window, the packed rollup ('' for 'x')
//
// Reply: {epoch before, epoch after, {rollup member, ...} written, number of windows
// compacted, {rollup member, ...} of skipped groups, number of stale 'n' groups}.
//
// It runs with flags=allow-oom: a compaction frees far more than it writes (a day of a
// series' windows, ~26 KB, folds into one rollup of a few hundred bytes), so a store at its
// maxmemory, which refuses the agents' writes, can still fold its backlog and make room
// (docs/store.md). Valkey then requires every key in KEYS, which the script already does.
var compactScript = newScript(`#!lua flags=allow-oom
local before = tonumber(redis.call('GET', KEYS[1]) or '0')
local current = (before == tonumber(ARGV[5]))
local a = 6
local srems, dels, zadd, out, skipped = {}, {}, {}, {}, {}
local ngone = tonumber(ARGV[a]); a = a + 1
for i = 1, ngone do srems[#srems + 1] = ARGV[a]; a = a + 1 end
local k, compacted, stale = 5, 0, 0
while k <= #KEYS do
  local rkey, lkey = KEYS[k], KEYS[k + 1]
  local rmember, rstart, form, nw = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  a = a + 4
  local ok = current or form == 'x'
  if ok then
    for j = 1, nw do
      local n = redis.call('HGET', KEYS[k + 1 + j], 'n')
      if n ~= ARGV[a + 2 * (j - 1) + 1] then ok = false; break end
    end
  end
  if ok and form == 'n' and redis.call('EXISTS', rkey, lkey) > 0 then
    -- The rollup outlived the rollup set that listed it (an idle profile's keys expired
    -- first): list it again, so the reader's reload finds it.
    redis.call('ZADD', KEYS[3], rstart, rmember)
    redis.call('EXPIRE', KEYS[3], ARGV[2])
    ok = false
    stale = stale + 1
  end
  local payload = ARGV[a + 2 * nw]
  if ok then
    for j = 1, nw do
      dels[#dels + 1] = KEYS[k + 1 + j]
      srems[#srems + 1] = ARGV[a + 2 * (j - 1)]
    end
    if form ~= 'x' then
      redis.call('SET', rkey, payload, 'EXAT', tonumber(rstart) + tonumber(ARGV[1]))
      dels[#dels + 1] = lkey
      out[#out + 1] = rmember
      zadd[#zadd + 1] = rstart
      zadd[#zadd + 1] = rmember
    end
    compacted = compacted + nw
  else
    skipped[#skipped + 1] = rmember
  end
  a = a + 2 * nw + 1
  k = k + 2 + nw
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
  if #zadd > 0 then redis.call('ZADD', KEYS[3], unpack(zadd)) end
  after = redis.call('INCR', KEYS[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[3], ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[3])
  local idx = redis.call('HGETALL', KEYS[4])
  for j = 1, #idx - 1, 2 do
    if tonumber(idx[j + 1]) < tonumber(ARGV[4]) then redis.call('HDEL', KEYS[4], idx[j]) end
  end
end
return {before, after, out, compacted, skipped, stale}
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
