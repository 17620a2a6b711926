package reboundriver

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
)

func TestBreakerOptions(t *testing.T) {
	rule := mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3)
	store := memstore.New(breaker.Rules{}, memstore.Options{})
	for _, c := range []struct {
		opts []Option
		want string
	}{
		{[]Option{WithBreaker(store), WithDependency("charge", "payments")}, ""},
		{[]Option{WithBreaker(nil)}, ""},
		{[]Option{WithDependency("charge", "payments")}, `reboundriver: WithDependency("charge", "payments") without WithBreaker, want a breaker.Store to keep the breaker`},
		{[]Option{WithBreaker(store), WithDependency("", "payments")}, `reboundriver: WithDependency: kind is empty, want the job kind bound to "payments"`},
		{[]Option{WithBreaker(store), WithDependency("charge", "pay ments")}, `reboundriver: WithDependency("charge"): breaker: dependency name "pay ments" has ' ' at offset 3, want printable ASCII without spaces or braces`},
	} {
		_, err := New(rule, c.opts...)
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("New(%d options) = %v, want %q", len(c.opts), err, c.want)
		}
	}
}

// A run is a rerun, metered by the breaker's budget, when River retries
// the job or runs it after a snooze (which keeps the attempt number).
func TestRerun(t *testing.T) {
	for _, c := range []struct {
		attempt int
		meta    string
		want    bool
	}{
		{1, "", false},
		{1, `{}`, false},
		{1, `{"snoozes": 0}`, false},
		{1, `{"snoozes": 2, "other": "x"}`, true},
		{1, `not json`, false},
		{2, "", true},
	} {
		job := &rivertype.JobRow{Attempt: c.attempt, Metadata: []byte(c.meta)}
		if got := rerun(job); got != c.want {
			t.Errorf("rerun(attempt %d, metadata %q) = %v, want %v", c.attempt, c.meta, got, c.want)
		}
	}
}
