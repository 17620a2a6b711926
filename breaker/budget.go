package breaker

import (
	"fmt"
	"math"
	"time"
)

// Token arithmetic is in millionths of a token, whole numbers, so that
// every store computes exactly the same balance.
const unit = 1_000_000

// Budget limits.
const (
	// MaxRatio is the most tokens one success may earn (1000%).
	MaxRatio = 10.0
	// MaxFloor is the fastest floor rate, in tokens per second.
	MaxFloor = 1e6
	// MinFloor is the slowest floor rate, in tokens per second (one token
	// every 1000 seconds); a budget needs a floor, or a backlog with no
	// fresh success to earn tokens would never be released.
	MinFloor = 0.001
	// MaxBurst is the largest number of tokens a budget holds.
	MaxBurst = 1_000_000_000
)

// Budget is a retry budget: a token bucket that earns a fraction of a
// token for every success (Ratio) plus a steady floor rate (Floor tokens
// a second), holds at most Burst tokens, and spends one token for every
// retry it lets through. Retries therefore never run faster than the
// floor plus that fraction of the successes, whatever the size of the
// backlog, which is what releases a backlog gently after an outage. It is
// an immutable value; its balance lives in [Tokens]. The zero Budget
// limits nothing. Build one with [NewBudget] or [ParseBudget].
type Budget struct {
	ratio int64 // units earned per success
	floor int64 // units earned per millisecond
	burst int64 // most units held
}

// NewBudget returns a budget that earns ratio tokens per success (0 to
// [MaxRatio]; 0.1 is 10%, kept to a millionth) and floor tokens a second
// ([MinFloor] to [MaxFloor], kept to a thousandth), holding at most burst
// tokens (1 to [MaxBurst]).
func NewBudget(ratio, floor float64, burst int) (Budget, error) {
	switch {
	case math.IsNaN(ratio) || ratio < 0 || ratio > MaxRatio:
		return Budget{}, fmt.Errorf("breaker: budget ratio %v is outside [0, %v], want the tokens one success earns, such as 0.1", ratio, MaxRatio)
	case math.IsNaN(floor) || floor < MinFloor || floor > MaxFloor:
		return Budget{}, fmt.Errorf("breaker: budget floor %v/s is outside [%v, %v], want tokens a second such as 5", floor, MinFloor, MaxFloor)
	}
	return newBudget(int64(math.Round(ratio*unit)), max(int64(math.Round(floor*1000)), 1), int64(burst))
}

// newBudget builds a budget from its whole-number settings: units earned
// per success, units earned per millisecond (thousandths of a token a
// second) and tokens held.
func newBudget(ratio, floor, burst int64) (Budget, error) {
	switch {
	case ratio < 0 || ratio > MaxRatio*unit:
		return Budget{}, fmt.Errorf("breaker: budget ratio %s is outside [0%%, 1000%%], want the share of a token one success earns, such as 10%%", formatPercent(ratio))
	case floor < 1 || floor > MaxFloor*1000:
		return Budget{}, fmt.Errorf("breaker: budget floor %s is outside [0.001/s, 1000000/s], want tokens a second such as 5/s", formatRate(floor))
	case burst < 1 || burst > MaxBurst:
		return Budget{}, fmt.Errorf("breaker: budget burst %d is outside [1, %d], want the most tokens the budget holds", burst, MaxBurst)
	}
	return Budget{ratio: ratio, floor: floor, burst: burst * unit}, nil
}

// MustBudget returns b, or panics if err is not nil.
func MustBudget(b Budget, err error) Budget {
	if err != nil {
		panic(err)
	}
	return b
}

// IsZero reports whether b is the zero Budget, which limits nothing.
func (b Budget) IsZero() bool { return b.burst == 0 }

// Ratio returns the tokens one success earns.
func (b Budget) Ratio() float64 { return float64(b.ratio) / unit }

// Floor returns the tokens the budget earns each second.
func (b Budget) Floor() float64 { return float64(b.floor) * 1000 / unit }

// Burst returns the most tokens the budget holds.
func (b Budget) Burst() int { return int(b.burst / unit) }

// Tokens is a budget's balance: the state a [Budget] rules. The zero
// Tokens is a budget never used, which holds a full burst at any time.
type Tokens struct {
	// Units is the balance in millionths of a token.
	Units int64
	// At is the Unix millisecond the balance was last brought up to date;
	// 0 only for a budget never used (a balance brought up to date at
	// Unix millisecond 0, which only a fake clock reads, keeps 1).
	At int64
}

// Available returns the balance at now, in tokens.
func (b Budget) Available(t Tokens, now time.Time) float64 {
	b.refill(&t, toMillis(now))
	return float64(t.Units) / unit
}

// Take spends one token at now for a retry and reports whether there was
// one. When there was not, next is when the next whole token is due from
// the floor rate alone (successes may earn it sooner). The zero Budget
// always allows.
func (b Budget) Take(t *Tokens, now time.Time) (ok bool, next time.Time) {
	ok, at := b.take(t, toMillis(now))
	if ok {
		return true, time.Time{}
	}
	return false, fromMillis(at)
}

// Deposit earns the tokens of one success at now.
func (b Budget) Deposit(t *Tokens, now time.Time) { b.deposit(t, toMillis(now)) }

// refill brings t up to now with the floor rate. A now before t.At (a
// clock that stepped back) earns nothing and keeps t.At. A budget never
// used (t.At is 0) holds a full burst: it has not earned its tokens from
// 1970 at the floor rate.
func (b Budget) refill(t *Tokens, now int64) {
	if b.burst == 0 {
		return
	}
	if t.At == 0 {
		t.Units, t.At = b.burst, max(now, 1)
		return
	}
	if now <= t.At {
		return
	}
	need := b.burst - t.Units
	switch {
	case need <= 0:
		t.Units = b.burst
	case now-t.At >= (need+b.floor-1)/b.floor:
		// Same test as elapsed*floor >= need, without the product, which
		// can overflow.
		t.Units = b.burst
	default:
		t.Units += (now - t.At) * b.floor
	}
	t.At = now
}

func (b Budget) take(t *Tokens, now int64) (bool, int64) {
	if b.burst == 0 {
		return true, 0
	}
	b.refill(t, now)
	if t.Units >= unit {
		t.Units -= unit
		return true, 0
	}
	wait := (unit - t.Units + b.floor - 1) / b.floor
	return false, addMillis(max(now, t.At), wait)
}

func (b Budget) deposit(t *Tokens, now int64) {
	if b.burst == 0 {
		return
	}
	b.refill(t, now)
	t.Units = min(t.Units+b.ratio, b.burst)
}
