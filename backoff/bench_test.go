package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

var benchSink time.Duration

// BenchmarkDelay times backoff.Delay, the hot path every adapter calls,
// for each policy of the package over attempts 1 to 16, keyed and not;
// decorrelated also at late attempts and at the widest cap there is, where
// it replays a window of its chain.
func BenchmarkDelay(b *testing.B) {
	exp := backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))
	cases := []struct {
		name  string
		p     backoff.Policy
		first int
	}{
		{"fixed", backoff.Must(backoff.Fixed(time.Second)), 1},
		{"exponential", exp, 1},
		{"linear", backoff.Must(backoff.Linear(100*time.Millisecond, 100*time.Millisecond, 10*time.Second)), 1},
		{"jitter", backoff.Must(backoff.Jitter(exp)), 1},
		{"equal", backoff.Must(backoff.EqualJitter(exp)), 1},
		{"proportional", backoff.Must(backoff.Proportional(0.5, exp)), 1},
		{"decorrelated", backoff.Must(backoff.Decorrelated(100*time.Millisecond, 10*time.Second)), 1},
		{"decorrelated-late", backoff.Must(backoff.Decorrelated(100*time.Millisecond, 10*time.Second)), 1000},
		{"decorrelated-widest", backoff.Must(backoff.Decorrelated(1, math.MaxInt64)), 1},
		{"decorrelated-widest-late", backoff.Must(backoff.Decorrelated(1, math.MaxInt64)), 5000},
	}
	for _, c := range cases {
		for _, keyed := range []bool{false, true} {
			name, src := c.name, backoff.Source{}
			if keyed {
				name, src = name+"/keyed", backoff.Key("0190f3a2-7c1e-7d4b-9a51-3f6c2e8b1d47")
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var d time.Duration
				for i := 0; b.Loop(); i++ {
					d += backoff.Delay(c.p, c.first+i%16, src)
				}
				benchSink = d
			})
		}
	}
}
