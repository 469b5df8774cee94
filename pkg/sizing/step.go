package sizing

import (
	"math/big"
)

// Adjustment math of SPEC §8.3, in whole units (millicores or bytes), computed exactly
// with rationals so that boundary cases (a drift of exactly the threshold) are decided
// the same way every time.

// drifts reports whether rec drifted from cur beyond thr percent, relative to cur:
// cur = 0 ⇒ drift iff rec > 0; else |rec − cur| / cur > thr/100.
func drifts(cur, rec int64, thr *big.Rat) bool {
	if cur == 0 {
		return rec > 0
	}
	return !within(cur, rec, thr)
}

// within reports |rec − base| / base ≤ thr/100, for base > 0.
func within(base, rec int64, thr *big.Rat) bool {
	lhs := new(big.Rat).SetInt(absDiff(rec, base))
	lhs.Mul(lhs, big.NewRat(100, 1))
	rhs := new(big.Rat).Mul(thr, new(big.Rat).SetInt64(base))
	return lhs.Cmp(rhs) <= 0
}

// step returns the target of one cycle moving cur toward rec, and whether it moved:
//   - no drift beyond thr ⇒ cur, unchanged;
//   - cur = 0 ⇒ rec;
//   - else capped = cur ± |rec − cur| × maxPct/100 toward rec, truncated to a whole unit,
//     never past rec, and at least one unit away from cur (so a small gap cannot stall);
//     if |rec − capped| / capped ≤ thr/100 the target snaps to rec exactly.
func step(cur, rec int64, thr, maxPct *big.Rat) (int64, bool) {
	if !drifts(cur, rec, thr) {
		return cur, false
	}
	if cur == 0 {
		return rec, true
	}
	delta := new(big.Rat).SetInt(absDiff(rec, cur))
	delta.Mul(delta, maxPct)
	delta.Quo(delta, big.NewRat(100, 1))
	capped := new(big.Rat).SetInt64(cur)
	if rec > cur {
		capped.Add(capped, delta)
	} else {
		capped.Sub(capped, delta)
	}
	// Truncate toward zero; capped is positive (it lies between cur and rec, both ≥ 0).
	t := new(big.Int).Quo(capped.Num(), capped.Denom())
	target := rec
	if t.IsInt64() {
		target = t.Int64()
	}
	switch {
	case (rec > cur && target > rec) || (rec < cur && target < rec):
		target = rec
	case target == cur && rec > cur:
		target = cur + 1
	case target == cur:
		target = cur - 1
	}
	if target > 0 && within(target, rec, thr) {
		target = rec
	}
	return target, target != cur
}

func absDiff(a, b int64) *big.Int {
	d := new(big.Int).Sub(big.NewInt(a), big.NewInt(b))
	return d.Abs(d)
}

const mib = 1 << 20

// stepMiB rounds a byte step target t (between cur and rec) up to a whole MiB (SPEC §2.4:
// people read sizes), never past rec and never back onto or beyond cur, where t itself is kept.
func stepMiB(cur, t, rec int64) int64 {
	if t <= 0 || t > (1<<62) {
		return t
	}
	r := (t + mib - 1) &^ (mib - 1)
	switch {
	case rec > cur:
		r = min(r, rec)
		if r <= cur {
			return t
		}
	default:
		r = max(r, rec)
		if r >= cur {
			return t
		}
	}
	return r
}
