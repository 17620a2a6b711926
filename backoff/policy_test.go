package backoff_test

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

func TestFixed(t *testing.T) {
	for _, d := range []time.Duration{0, 1, time.Second, math.MaxInt64} {
		p := backoff.Must(backoff.Fixed(d))
		for _, a := range []int{math.MinInt, 0, 1, 2, 100, math.MaxInt} {
			if got := backoff.Delay(p, a, backoff.Source{}); got != d {
				t.Errorf("fixed(%v) at attempt %d = %v, want %v", d, a, got, d)
			}
		}
		if p.Max() != d {
			t.Errorf("fixed(%v).Max() = %v", d, p.Max())
		}
	}
}

func TestExponentialTable(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		base, cap time.Duration
		attempt   int
		want      time.Duration
	}{
		{100 * ms, 10 * time.Second, 1, 100 * ms},
		{100 * ms, 10 * time.Second, 2, 200 * ms},
		{100 * ms, 10 * time.Second, 3, 400 * ms},
		{100 * ms, 10 * time.Second, 5, 1600 * ms},
		{100 * ms, 10 * time.Second, 7, 6400 * ms},
		{100 * ms, 10 * time.Second, 8, 10 * time.Second}, // 12.8s clamped
		{100 * ms, 10 * time.Second, 20, 10 * time.Second},
		{100 * ms, 10 * time.Second, 0, 100 * ms},  // below 1 counts as 1
		{100 * ms, 10 * time.Second, -5, 100 * ms}, // likewise
		{100 * ms, 10 * time.Second, math.MaxInt, 10 * time.Second},
		{time.Second, time.Hour, 5, 16 * time.Second},
		{1, math.MaxInt64, 63, 1 << 62},
		{1, math.MaxInt64, 64, math.MaxInt64},
		{1, math.MaxInt64, math.MaxInt, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, 2, math.MaxInt64},
		{3, 1 << 62, 61, 3 << 60},
		{3, 1 << 62, 62, 1 << 62},
		{time.Second, time.Second, 2, time.Second},
	}
	for _, tt := range tests {
		p := backoff.Must(backoff.Exponential(tt.base, tt.cap))
		if got := backoff.Delay(p, tt.attempt, backoff.Source{}); got != tt.want {
			t.Errorf("%v at attempt %d = %v, want %v", p, tt.attempt, got, tt.want)
		}
		if got := p.Delay(tt.attempt, backoff.Source{}); got != tt.want {
			t.Errorf("%v.Delay(%d) = %v, want %v", p, tt.attempt, got, tt.want)
		}
	}
}

func TestLinearTable(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		base, step, cap time.Duration
		attempt         int
		want            time.Duration
	}{
		{100 * ms, 100 * ms, time.Second, 1, 100 * ms},
		{100 * ms, 100 * ms, time.Second, 3, 300 * ms},
		{100 * ms, 100 * ms, time.Second, 10, time.Second},
		{100 * ms, 100 * ms, time.Second, 11, time.Second},
		{100 * ms, 100 * ms, time.Second, math.MaxInt, time.Second},
		{100 * ms, 0, time.Second, 50, 100 * ms},
		{0, time.Second, time.Minute, 1, 0},
		{0, time.Second, time.Minute, 2, time.Second},
		{5 * ms, 3 * ms, 14 * ms, 4, 14 * ms},
		{5 * ms, 3 * ms, 13 * ms, 4, 13 * ms},
		{0, math.MaxInt64, math.MaxInt64, 2, math.MaxInt64},
		{0, math.MaxInt64, math.MaxInt64, math.MaxInt, math.MaxInt64},
		{1, 1, math.MaxInt64, math.MaxInt, math.MaxInt64}, // 1 + (MaxInt-1), exactly
		{1, 1, math.MaxInt64 - 5, math.MaxInt, math.MaxInt64 - 5},
		{1, 1, math.MaxInt64, math.MaxInt - 7, math.MaxInt64 - 7},
		{0, 0, 0, 7, 0},
		{time.Second, 0, time.Second, 0, time.Second},
	}
	for _, tt := range tests {
		p := backoff.Must(backoff.Linear(tt.base, tt.step, tt.cap))
		if got := backoff.Delay(p, tt.attempt, backoff.Source{}); got != tt.want {
			t.Errorf("%v at attempt %d = %v, want %v", p, tt.attempt, got, tt.want)
		}
	}
}

// TestCurvesExact checks exponential and linear against arbitrary-precision
// arithmetic over random arguments and attempts, including math.MaxInt.
func TestCurvesExact(t *testing.T) {
	r := newRand(1, 2)
	for range 20000 {
		a := attemptsToProbe(r)[r.IntN(27)]
		n := big.NewInt(int64(max(a, 1) - 1))

		base, cap := orderedPositive(r)
		e := backoff.Must(backoff.Exponential(base, cap))
		want := new(big.Int).Lsh(big.NewInt(int64(base)), uint(min(n.Uint64(), 200)))
		if want.Cmp(big.NewInt(int64(cap))) > 0 {
			want.SetInt64(int64(cap))
		}
		if got := backoff.Delay(e, a, backoff.Source{}); got != time.Duration(want.Int64()) {
			t.Fatalf("%v at attempt %d = %d, want %s", e, a, got, want)
		}

		lbase, lcap := randDuration(r), randDuration(r)
		if lcap < lbase {
			lbase, lcap = lcap, lbase
		}
		step := randDuration(r)
		l := backoff.Must(backoff.Linear(lbase, step, lcap))
		lwant := new(big.Int).Mul(big.NewInt(int64(step)), n)
		lwant.Add(lwant, big.NewInt(int64(lbase)))
		if lwant.Cmp(big.NewInt(int64(lcap))) > 0 {
			lwant.SetInt64(int64(lcap))
		}
		if got := backoff.Delay(l, a, backoff.Source{}); got != time.Duration(lwant.Int64()) {
			t.Fatalf("%v at attempt %d = %d, want %s", l, a, got, lwant)
		}
	}
}

// TestConstructorErrors checks every validation error: the constructor
// refuses, and the message says what was wrong and what was wanted.
func TestConstructorErrors(t *testing.T) {
	fixed := backoff.Must(backoff.Fixed(time.Second))
	tests := []struct {
		name string
		make func() error
		want []string // substrings the message must hold
	}{
		{"fixed negative", func() error { _, err := backoff.Fixed(-time.Second); return err },
			[]string{"backoff: ", "fixed delay -1s is negative", "want >= 0"}},
		{"exponential zero base", func() error { _, err := backoff.Exponential(0, time.Second); return err },
			[]string{"exponential base 0s is not positive", "want > 0"}},
		{"exponential negative base", func() error { _, err := backoff.Exponential(-time.Millisecond, time.Second); return err },
			[]string{"exponential base -1ms is not positive", "want > 0"}},
		{"exponential cap below base", func() error {
			_, err := backoff.Exponential(100*time.Millisecond, 50*time.Millisecond)
			return err
		}, []string{"backoff: cap 50ms is below base 100ms"}},
		{"linear negative base", func() error { _, err := backoff.Linear(-1, 0, time.Second); return err },
			[]string{"linear base -1ns is negative", "want >= 0"}},
		{"linear negative step", func() error { _, err := backoff.Linear(0, -time.Second, time.Second); return err },
			[]string{"linear step -1s is negative", "want >= 0"}},
		{"linear cap below base", func() error { _, err := backoff.Linear(time.Second, 0, time.Millisecond); return err },
			[]string{"cap 1ms is below base 1s"}},
		{"decorrelated zero base", func() error { _, err := backoff.Decorrelated(0, time.Second); return err },
			[]string{"decorrelated base 0s is not positive", "want > 0"}},
		{"decorrelated cap below base", func() error { _, err := backoff.Decorrelated(time.Second, time.Millisecond); return err },
			[]string{"cap 1ms is below base 1s"}},
		{"jitter nil", func() error { _, err := backoff.Jitter(nil); return err },
			[]string{"inner policy is nil", "want a policy to wrap"}},
		{"jitter empty spec", func() error { _, err := backoff.Jitter(backoff.Spec{}); return err },
			[]string{"inner policy is nil"}},
		{"equal nil", func() error { _, err := backoff.EqualJitter(nil); return err },
			[]string{"inner policy is nil", "want a policy to wrap"}},
		{"proportional nil", func() error { _, err := backoff.Proportional(0.5, nil); return err },
			[]string{"inner policy is nil"}},
		{"proportional zero", func() error { _, err := backoff.Proportional(0, fixed); return err },
			[]string{"jitter fraction 0 is outside (0, 1]"}},
		{"proportional above one", func() error { _, err := backoff.Proportional(1.5, fixed); return err },
			[]string{"jitter fraction 1.5 is outside (0, 1]"}},
		{"proportional negative", func() error { _, err := backoff.Proportional(-0.1, fixed); return err },
			[]string{"jitter fraction -0.1 is outside (0, 1]"}},
		{"proportional NaN", func() error { _, err := backoff.Proportional(math.NaN(), fixed); return err },
			[]string{"jitter fraction NaN is outside (0, 1]"}},
		{"proportional Inf", func() error { _, err := backoff.Proportional(math.Inf(1), fixed); return err },
			[]string{"jitter fraction +Inf is outside (0, 1]"}},
		{"rule nil policy", func() error { _, err := backoff.NewRule(nil, 3); return err },
			[]string{"rule policy is nil", "want a policy"}},
		{"rule empty spec", func() error { _, err := backoff.NewRule(backoff.Spec{}, 3); return err },
			[]string{"rule policy is nil"}},
		{"rule zero attempts", func() error { _, err := backoff.NewRule(fixed, 0); return err },
			[]string{"MaxAttempts 0 is below 1", "want the total number of runs (>= 1)"}},
		{"rule negative attempts", func() error { _, err := backoff.NewRule(fixed, -3); return err },
			[]string{"MaxAttempts -3 is below 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.make()
			if err == nil {
				t.Fatal("no error, want one")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestMustPanicsOnError(t *testing.T) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !strings.Contains(err.Error(), "cap 1ns is below base 1s") {
			t.Errorf("Must panicked with %v, want the constructor's error", r)
		}
	}()
	backoff.Must(backoff.Exponential(time.Second, 1))
	t.Error("Must did not panic")
}

// TestZeroValues checks that zero-valued policy structs, which bypass the
// constructors, still behave: a zero delay, no panic.
func TestZeroValues(t *testing.T) {
	policies := []backoff.Policy{
		backoff.FixedPolicy{}, backoff.ExponentialPolicy{}, backoff.LinearPolicy{},
		backoff.DecorrelatedPolicy{}, backoff.FullJitterPolicy{}, backoff.EqualJitterPolicy{},
		backoff.ProportionalPolicy{}, backoff.Spec{}, &backoff.Spec{}, (*backoff.Spec)(nil), nil,
	}
	for _, p := range policies {
		for _, src := range []backoff.Source{{}, backoff.Key("x")} {
			for _, a := range []int{0, 1, 2, math.MaxInt} {
				if got := backoff.Delay(p, a, src); got != 0 {
					t.Errorf("Delay(%#v, %d) = %v, want 0", p, a, got)
				}
			}
		}
	}
}

// foreign is a Policy this package does not know, misbehaving on purpose.
type foreign struct{ d, max time.Duration }

func (f foreign) Delay(int, backoff.Source) time.Duration { return f.d }
func (f foreign) Max() time.Duration                      { return f.max }
func (f foreign) String() string                          { return "foreign" }

func TestDelayGuardsForeignPolicies(t *testing.T) {
	tests := []struct {
		p    foreign
		want time.Duration
	}{
		{foreign{d: time.Second, max: time.Minute}, time.Second},
		{foreign{d: time.Hour, max: time.Minute}, time.Minute},
		{foreign{d: -time.Hour, max: time.Minute}, 0},
		{foreign{d: time.Hour, max: -time.Minute}, 0},
	}
	for _, tt := range tests {
		if got := backoff.Delay(tt.p, 1, backoff.Source{}); got != tt.want {
			t.Errorf("Delay(%+v) = %v, want %v", tt.p, got, tt.want)
		}
		// Wrapped, the foreign policy is guarded too.
		j := backoff.Must(backoff.Jitter(tt.p))
		for a := 1; a < 50; a++ {
			if got := backoff.Delay(j, a, backoff.KeyUint64(uint64(a))); got < 0 || got > max(tt.p.max, 0) {
				t.Errorf("jitter(%+v) = %v, outside [0, %v]", tt.p, got, max(tt.p.max, 0))
			}
		}
	}
}

// TestWrappersFollowASpec: a wrapper around a *Spec answers for the policy
// the Spec holds now, not the one it held when the wrapper was built. After
// spec.Set every wrapper's Max is the new inner maximum and no delay passes
// it, whichever way the maximum moved.
func TestWrappersFollowASpec(t *testing.T) {
	for _, tt := range []struct{ from, to string }{
		{"fixed(1h)", "fixed(1s)"},
		{"fixed(1s)", "fixed(1h)"},
		{"exponential(1s, 1h)", "exponential(100ms, 2s)"},
		{"linear(1s, 1s, 5s)", "exponential(1m, 1h)"},
	} {
		spec := &backoff.Spec{}
		if err := spec.Set(tt.from); err != nil {
			t.Fatal(err)
		}
		wrappers := []backoff.Policy{
			backoff.Must(backoff.Proportional(0.5, spec)),
			backoff.Must(backoff.Proportional(1, spec)),
			backoff.Must(backoff.Jitter(spec)),
			backoff.Must(backoff.EqualJitter(spec)),
		}
		if err := spec.Set(tt.to); err != nil {
			t.Fatal(err)
		}
		want := spec.Max()
		for _, w := range wrappers {
			if got := w.Max(); got != want {
				t.Errorf("%v after Set(%q): Max() = %v, want the Spec's %v", w, tt.to, got, want)
			}
			for a := 1; a <= 20; a++ {
				for k := range 50 {
					src := backoff.KeyUint64(uint64(k))
					if d := backoff.Delay(w, a, src); d < 0 || d > want {
						t.Fatalf("%v after Set(%q) at attempt %d = %v, outside [0, %v]", w, tt.to, a, d, want)
					}
					if d := w.Delay(a, src); d < 0 || d > want {
						t.Fatalf("%v.Delay after Set(%q) at attempt %d = %v, outside [0, %v]", w, tt.to, a, d, want)
					}
				}
			}
		}
	}
}

// embedded is a foreign policy that embeds one of the package's own and
// overrides its Delay: it is foreign all the same, and guarded.
type embedded struct {
	backoff.ExponentialPolicy
	d time.Duration
}

func (e embedded) Delay(int, backoff.Source) time.Duration { return e.d }

func TestDelayGuardsEmbeddingPolicies(t *testing.T) {
	exp := backoff.Must(backoff.Exponential(time.Second, time.Minute))
	for _, tt := range []struct {
		d, want time.Duration
	}{{time.Hour, time.Minute}, {-time.Hour, 0}, {2 * time.Second, 2 * time.Second}} {
		p := embedded{exp, tt.d}
		if got := backoff.Delay(p, 1, backoff.Source{}); got != tt.want {
			t.Errorf("Delay(%v returning %v) = %v, want %v", p, tt.d, got, tt.want)
		}
	}
}

// TestWrappersGuardForeignPolicies: each wrapper keeps a foreign inner
// policy's delay within [0, its Max()], reports that policy as its Inner
// and prints it, and a zero wrapper waits 0.
func TestWrappersGuardForeignPolicies(t *testing.T) {
	f := foreign{d: time.Hour, max: time.Minute}
	neg := foreign{d: -time.Hour, max: time.Minute}
	for _, inner := range []foreign{f, neg} {
		wrappers := []interface {
			backoff.Policy
			Inner() backoff.Policy
		}{
			backoff.Must(backoff.Jitter(inner)),
			backoff.Must(backoff.EqualJitter(inner)),
			backoff.Must(backoff.Proportional(1, inner)),
		}
		for _, w := range wrappers {
			if w.Inner() != backoff.Policy(inner) {
				t.Errorf("%v.Inner() = %#v, want the foreign policy %#v", w, w.Inner(), inner)
			}
			if w.Max() != time.Minute || !strings.HasSuffix(w.String(), "foreign)") {
				t.Errorf("%v: Max() = %v, want %v and the foreign policy printed", w, w.Max(), time.Minute)
			}
			for a := 1; a < 50; a++ {
				for _, src := range []backoff.Source{{}, backoff.KeyUint64(uint64(a))} {
					if d := w.Delay(a, src); d < 0 || d > time.Minute {
						t.Fatalf("%v around %+v at %d = %v, outside [0, 1m]", w, inner, a, d)
					}
				}
			}
		}
	}
}

// TestDelayAllocatesNothing: no policy, keyed or not, allocates to compute
// a delay, including a foreign one behind the guard.
func TestDelayAllocatesNothing(t *testing.T) {
	exp := backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))
	spec := &backoff.Spec{Policy: exp}
	for _, p := range []backoff.Policy{
		backoff.Must(backoff.Fixed(time.Second)), exp,
		backoff.Must(backoff.Linear(time.Second, time.Second, time.Minute)),
		backoff.Must(backoff.Decorrelated(100*time.Millisecond, time.Hour)),
		backoff.Must(backoff.Jitter(exp)), backoff.Must(backoff.EqualJitter(exp)),
		backoff.Must(backoff.Proportional(0.2, exp)),
		backoff.Must(backoff.Jitter(backoff.Must(backoff.Proportional(0.5, backoff.Must(backoff.EqualJitter(spec)))))),
		backoff.Spec{Policy: exp}, spec, foreign{d: time.Hour, max: time.Minute},
		backoff.Must(backoff.Jitter(foreign{d: time.Hour, max: time.Minute})),
	} {
		for _, src := range []backoff.Source{{}, backoff.Key("job-42")} {
			if n := testing.AllocsPerRun(200, func() { _ = backoff.Delay(p, 7, src) }); n != 0 {
				t.Errorf("Delay(%v, %+v) allocates %v times", p, src, n)
			}
		}
	}
}
