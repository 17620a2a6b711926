package backoff

import (
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
