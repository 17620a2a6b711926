package backoff

import (
	"math/bits"
	"math/rand/v2"
)

// A Source supplies the randomness a jittered policy draws from.
//
// The zero Source is unkeyed: each draw is fresh, taken from the runtime's
// per-thread generator through math/rand/v2, which takes no global lock.
// A keyed Source ([Key], [KeyUint64]) is deterministic: a draw depends only
// on the key, the attempt and the position of the drawing wrapper in the
// policy, so one job's schedule is reproducible and identical wherever it is
// computed. Sources are small values, safe to copy and to share.
type Source struct {
	seed  uint64
	keyed bool
}

// KeyUint64 returns a Source keyed by a numeric job identity.
func KeyUint64(id uint64) Source {
	return Source{seed: mix(id ^ 0x6a09e667f3bcc909), keyed: true}
}

// Key returns a Source keyed by a job identity such as a job ID. The string
// is hashed eight bytes at a time by a fixed multiply-rotate hash, so the
// result is the same in every process, on every machine and in every version
// of rebound; a 36-byte UUID hashes in a few nanoseconds.
func Key(id string) Source {
	h := uint64(len(id)) * 0x9e3779b97f4a7c15
	i := 0
	for ; i+8 <= len(id); i += 8 {
		w := uint64(id[i]) | uint64(id[i+1])<<8 | uint64(id[i+2])<<16 | uint64(id[i+3])<<24 |
			uint64(id[i+4])<<32 | uint64(id[i+5])<<40 | uint64(id[i+6])<<48 | uint64(id[i+7])<<56
		h = bits.RotateLeft64(h^(w*0x87c37b91114253d5), 31) * 0x4cf5ad432745937f
	}
	var w uint64
	for j := i; j < len(id); j++ {
		w |= uint64(id[j]) << (8 * uint(j-i))
	}
	h = bits.RotateLeft64(h^(w*0x87c37b91114253d5), 31) * 0x4cf5ad432745937f
	return KeyUint64(h)
}

// Keyed reports whether s draws deterministically from a key.
func (s Source) Keyed() bool { return s.keyed }

// keyedDraw is the draw of a keyed Source for attempt, in the Source's own
// lane; a wrapper hands its inner policy the lane of sub(). An unkeyed
// Source draws from fresh instead. Callers branch on keyed themselves, so
// that both paths inline (a method doing both would not).
func (s Source) keyedDraw(attempt int) uint64 { return mix(s.seed ^ uint64(attempt)*golden) }

// golden is 2^64 divided by the golden ratio, odd: multiplying the attempt
// by it spreads consecutive attempts across the whole word before mixing.
const golden = 0x9e3779b97f4a7c15

// fresh returns a fresh random word from the runtime's per-thread generator.
func fresh() uint64 { return rand.Uint64() }

// sub returns the independent Source a wrapper hands to the policy it wraps,
// so nested wrappers never reuse one another's draws.
func (s Source) sub() Source {
	if !s.keyed {
		return s
	}
	return Source{seed: mix(s.seed + 0xbb67ae8584caa73b), keyed: true}
}

// mix is the splitmix64 finaliser: a bijection on uint64 whose output bits all
// depend on every input bit.
func mix(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// between maps the random word r onto [lo, hi] (inclusive) by a 64x64-bit
// multiply. The bias is at most (hi-lo+1)/2^64, far below anything a retry
// schedule can observe, and the mapping is monotone in r.
func between(r uint64, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	n := uint64(hi - lo)
	if n == ^uint64(0) {
		return lo + int64(r)
	}
	off, _ := bits.Mul64(r, n+1)
	return lo + int64(off)
}
