package backoff

import (
	"math"
	"testing"
	"time"
)

// TestOwnPoliciesTrusted: every policy type of the package is trusted (so a
// wrapper calls it unguarded), and Delay gives what its method gives; a
// foreign policy and a *Spec are not.
func TestOwnPoliciesTrusted(t *testing.T) {
	exp := Must(Exponential(time.Second, time.Minute))
	for _, p := range []Policy{
		Must(Fixed(time.Second)), exp, Must(Linear(time.Second, time.Second, time.Minute)),
		Must(Decorrelated(time.Second, time.Minute)), Must(Jitter(exp)), Must(EqualJitter(exp)),
		Must(Proportional(0.5, exp)), Spec{Policy: exp},
	} {
		if !trusted(p) {
			t.Errorf("%T is not trusted", p)
		}
		for a := range 40 {
			if d, m := Delay(p, a, KeyUint64(7)), p.Delay(a, KeyUint64(7)); d != m {
				t.Errorf("%v at %d: Delay %v, method %v", p, a, d, m)
			}
		}
	}
	if trusted(&Spec{Policy: exp}) || trusted(guarded{exp}) || trusted(nil) {
		t.Error("a *Spec, a guard or nil is trusted")
	}
}

// forwarding is a policy this package does not know, forwarding to one it
// does: a wrapper calls it through the interface, with a sub-Source.
type forwarding struct{ p Policy }

func (f forwarding) Delay(attempt int, src Source) time.Duration { return f.p.Delay(attempt, src) }
func (f forwarding) Max() time.Duration                          { return f.p.Max() }
func (f forwarding) String() string                              { return f.p.String() }

// TestWrappersCallCurvesAsTheInterfaceWould: a wrapper calls a curve it
// wraps (fixed, exponential, linear) by its concrete type and hands it no
// sub-Source; it must give, keyed and not, exactly what it gives when the
// same curve is reached through the interface, with the sub-Source.
func TestWrappersCallCurvesAsTheInterfaceWould(t *testing.T) {
	curves := []Policy{
		Must(Fixed(3 * time.Second)),
		Must(Exponential(100*time.Millisecond, 10*time.Second)),
		Must(Exponential(1, 1<<62)),
		Must(Linear(time.Second, 250*time.Millisecond, time.Minute)),
		Must(Linear(time.Second, 0, time.Minute)),
	}
	wrappers := []struct {
		name string
		wrap func(Policy) Policy
	}{
		{"jitter", func(p Policy) Policy { return Must(Jitter(p)) }},
		{"equal", func(p Policy) Policy { return Must(EqualJitter(p)) }},
		{"proportional", func(p Policy) Policy { return Must(Proportional(0.3, p)) }},
		{"proportional-1", func(p Policy) Policy { return Must(Proportional(1, p)) }},
	}
	for _, c := range curves {
		for _, w := range wrappers {
			direct, through := w.wrap(c), w.wrap(forwarding{c})
			if direct.Max() != through.Max() {
				t.Errorf("%s over %v: Max %v, through the interface %v", w.name, c, direct.Max(), through.Max())
			}
			for key := range uint64(50) {
				src := KeyUint64(key)
				for _, a := range []int{-1, 0, 1, 2, 5, 17, 40, 64, 1000, math.MaxInt} {
					if d, e := Delay(direct, a, src), Delay(through, a, src); d != e {
						t.Fatalf("%s over %v, key %d, attempt %d: %v, through the interface %v", w.name, c, key, a, d, e)
					}
				}
			}
		}
	}
}
