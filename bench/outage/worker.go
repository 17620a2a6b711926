package outage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
)

// Spec is what a worker process is told: which engine and queue to serve,
// how, and where the dependency is. It travels as JSON in one argument.
type Spec struct {
	Engine      string `json:"engine"`
	Mode        string `json:"mode"` // "plain" or "breaker"
	Dep         string `json:"dep"`  // the dependency's URL
	Concurrency int    `json:"concurrency"`
	Rule        string `json:"rule"`
	Breaker     string `json:"breaker"`
	Redis       string `json:"redis,omitempty"` // address
	Postgres    string `json:"postgres,omitempty"`
	Prefix      string `json:"prefix,omitempty"` // native and the Redis breaker store
	Queue       string `json:"queue,omitempty"`
	Schema      string `json:"schema,omitempty"` // River and the PostgreSQL breaker store
}

// Guarded reports whether the worker runs with the breaker.
func (s Spec) Guarded() bool { return s.Mode == "breaker" }

// rule and rules are the spec's retry rule and breaker rules.
func (s Spec) rule() (backoff.Rule, error) { return backoff.ParseRule(s.Rule) }

func (s Spec) rules() (breaker.Rules, error) {
	b, err := breaker.Parse(s.Breaker)
	if err != nil {
		return breaker.Rules{}, err
	}
	return breaker.Rules{Named: map[string]breaker.Breaker{Dependency: b}}, nil
}

// spec builds the worker spec of a run.
func (s Scenario) spec(base Spec, engine, mode, dep string) Spec {
	base.Engine, base.Mode, base.Dep, base.Concurrency = engine, mode, dep, s.Concurrency
	base.Rule, base.Breaker = s.Rule.String(), s.Breaker.String()
	return base
}

// Args returns the arguments that start a worker process for sp.
func (sp Spec) Args() []string {
	b, _ := json.Marshal(sp)
	return []string{"-worker", string(b)}
}

// caller calls the dependency.
type caller struct {
	url    string
	client *http.Client
}

func newCaller(url string, concurrency int) *caller {
	tr := &http.Transport{MaxIdleConns: concurrency * 2, MaxIdleConnsPerHost: concurrency * 2, IdleConnTimeout: time.Minute}
	return &caller{url: url, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// errDown is what a job returns when the dependency answers an error.
type errDown struct{ status int }

func (e errDown) Error() string { return fmt.Sprintf("dependency answered %d", e.status) }

// call is one job's work: one call into the dependency.
func (c *caller) call(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errDown{resp.StatusCode}
	}
	return nil
}

// report prints a worker's internal errors, at most a few, to stderr.
func report(engine string) func(error) {
	var n atomic.Int64
	return func(err error) {
		if n.Add(1) <= 5 {
			fmt.Fprintf(os.Stderr, "outage worker %s (pid %d): %v\n", engine, os.Getpid(), err)
		}
	}
}

// RunWorker serves the run sp describes until stop is closed (the parent
// closes the worker's standard input), then shuts down.
func RunWorker(ctx context.Context, sp Spec, stop <-chan struct{}) error {
	switch sp.Engine {
	case "native":
		return runNative(ctx, sp, stop)
	case "asynq":
		return runAsynq(ctx, sp, stop)
	case "river":
		return runRiver(ctx, sp, stop)
	}
	return fmt.Errorf("outage: unknown engine %q, want native, asynq or river", sp.Engine)
}

// untilStop waits until stop is closed or ctx ends, then shuts a worker
// down, giving shutdown 5s.
func untilStop(ctx context.Context, stop <-chan struct{}, shutdown func(context.Context) error) error {
	select {
	case <-stop:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return shutdown(sctx)
}

// parallel calls f n times from 16 goroutines, and returns the first
// error.
func parallel(ctx context.Context, n int, f func(context.Context) error) error {
	var next atomic.Int64
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			for next.Add(1) <= int64(n) {
				if err := f(ctx); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range 16 {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
