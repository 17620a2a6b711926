package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// report is what happened to every job on every engine.
type report struct {
	rule    backoff.Rule
	engines []string // column order
	notes   []string // one footnote per engine
	jobs    []jobReport
	elapsed time.Duration
}

// jobReport is one job on every engine.
type jobReport struct {
	job
	// planned[n-1] is rebound's delay after failed attempt n, keyed by the
	// job's key.
	planned []time.Duration
	on      map[string]*outcome // by engine name
}

// outcome is one job on one engine.
type outcome struct {
	runs      []attemptRun // in attempt order
	state     string
	decisions map[int]backoff.Decision // by failed attempt number
}

// gap returns the time from the end of run n to the start of run n+1.
func (o *outcome) gap(n int) (time.Duration, bool) {
	if n < 1 || n >= len(o.runs) {
		return 0, false
	}
	return o.runs[n].start.Sub(o.runs[n-1].end), true
}

// race runs every job on every engine under cfg.rule, printing each
// attempt to stdout as it ends, and returns what happened.
func race(ctx context.Context, cfg config, stdout, stderr io.Writer) (*report, error) {
	begin := time.Now()

	b, err := openBackends(ctx, cfg, stderr)
	if err != nil {
		return nil, err
	}
	defer b.close()

	rec := newRecorder(stdout)
	ae, err := newAsynq(b.rdb, cfg.namespace, cfg.rule, cfg.precise, rec, stderr)
	if err != nil {
		return nil, err
	}
	re, err := b.newRiver(cfg.rule, rec)
	if err != nil {
		return nil, err
	}
	ne, err := newNative(b.rdb, cfg.namespace, cfg.rule, rec, stderr)
	if err != nil {
		return nil, err
	}
	engines := []engine{ae, re, ne}

	fmt.Fprintf(stdout, "rebound quickstart: policy %s, MaxAttempts %d (1 run + up to %d retries)\n",
		cfg.rule.Policy(), cfg.rule.MaxAttempts(), cfg.rule.MaxAttempts()-1)
	fmt.Fprintf(stdout, "asynq and native on %s; river on %s\n", b.redisDesc, b.sqlDesc)
	for _, j := range jobs {
		fmt.Fprintf(stdout, "  job %-12s  %s\n", j.key, j.about)
	}
	fmt.Fprintln(stdout)

	ids := map[ref]string{}
	for _, e := range engines {
		for _, j := range jobs {
			id, err := e.enqueue(ctx, j.key)
			if err != nil {
				return nil, err
			}
			rec.name(e.name(), id, j.key)
			ids[ref{e.name(), j.key}] = id
		}
	}

	rec.start()
	var started []engine
	stopAll := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var errs []error
		for _, e := range started {
			if err := e.stop(sctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: stop: %w", e.name(), err))
			}
		}
		started = nil
		return errors.Join(errs...)
	}
	defer func() { _ = stopAll() }()
	for _, e := range engines {
		if err := e.start(ctx); err != nil {
			return nil, err
		}
		started = append(started, e)
	}

	wctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	states, err := waitDone(wctx, engines, ids)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, fmt.Errorf("after -timeout %s, %w; the policy's delays may need a longer -timeout", cfg.timeout, err)
	}
	if err != nil {
		return nil, err
	}
	// Stopping waits for the last attempts' observer calls, so no progress
	// line comes after the table.
	if err := stopAll(); err != nil {
		return nil, err
	}

	rep := &report{rule: cfg.rule, elapsed: time.Since(begin)}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range engines {
		rep.engines = append(rep.engines, e.name())
		rep.notes = append(rep.notes, e.note())
	}
	for _, j := range jobs {
		jr := jobReport{job: j, on: map[string]*outcome{}}
		for _, s := range backoff.Schedule(cfg.rule.Policy(), backoff.Key(j.key), cfg.rule.MaxAttempts()-1) {
			jr.planned = append(jr.planned, s.Delay)
		}
		for _, e := range engines {
			k := ref{e.name(), j.key}
			runs := slices.Clone(rec.runs[k])
			slices.SortFunc(runs, func(a, b attemptRun) int { return a.attempt - b.attempt })
			jr.on[e.name()] = &outcome{runs: runs, state: states[k], decisions: rec.decisions[k]}
		}
		rep.jobs = append(rep.jobs, jr)
	}
	return rep, nil
}

// waitDone polls the engines until no job will run again and returns each
// job's final state.
func waitDone(ctx context.Context, engines []engine, ids map[ref]string) (map[ref]string, error) {
	states := map[ref]string{}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		pending := 0
		for _, e := range engines {
			for _, j := range jobs {
				k := ref{e.name(), j.key}
				if _, done := states[k]; done {
					continue
				}
				state, done, err := e.final(ctx, ids[k])
				if err != nil && ctx.Err() == nil {
					return nil, err
				}
				if done {
					states[k] = state
				} else {
					pending++
				}
			}
		}
		if pending == 0 {
			return states, nil
		}
		select {
		case <-ctx.Done():
			var left []string
			for _, e := range engines {
				for _, j := range jobs {
					if _, done := states[ref{e.name(), j.key}]; !done {
						left = append(left, e.name()+"/"+j.key)
					}
				}
			}
			return nil, fmt.Errorf("jobs still not finished (%s): %w", strings.Join(left, ", "), context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// print writes the side-by-side table and its footnotes.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nafter each failed attempt: the delay rebound planned (jitter keyed by the job's key) and the gap each engine left\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "job\tattempt\tplanned")
	for _, e := range r.engines {
		fmt.Fprintf(tw, "\t%s", e)
	}
	fmt.Fprintln(tw)
	late := map[string]time.Duration{}
	mismatch, early := false, false
	for _, j := range r.jobs {
		rows := 0
		for _, o := range j.on {
			rows = max(rows, len(o.runs)-1)
		}
		for n := 1; n <= rows; n++ {
			planned := time.Duration(-1)
			if n <= len(j.planned) {
				planned = j.planned[n-1]
			}
			fmt.Fprintf(tw, "%s\t%d\t%s", j.key, n, fmtDur(planned))
			for _, e := range r.engines {
				o := j.on[e]
				g, ok := o.gap(n)
				if !ok {
					fmt.Fprint(tw, "\t-")
					continue
				}
				cell := fmtDur(g)
				if d, ok := o.decisions[n]; ok && d.Delay != planned {
					cell += " (decided " + fmtDur(d.Delay) + "!)"
					mismatch = true
				}
				if planned >= 0 {
					if g < planned {
						cell += " EARLY"
						early = true
					}
					late[e] = max(late[e], g-planned)
				}
				fmt.Fprintf(tw, "\t%s", cell)
			}
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s\tfinal\t", j.key)
		for _, e := range r.engines {
			o := j.on[e]
			fmt.Fprintf(tw, "\t%s, %s", o.state, plural(len(o.runs), "run"))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	switch {
	case mismatch:
		fmt.Fprintln(w, "! an engine decided a delay other than the planned one: its jitter is not keyed by the job's key")
	default:
		fmt.Fprintln(w, "* every engine decided exactly the planned delay for every retry: one policy, one key, one schedule.")
	}
	if early {
		fmt.Fprintln(w, "! EARLY: a retry started before its planned delay had passed")
	}
	var lat []string
	for _, e := range r.engines {
		if d, ok := late[e]; ok {
			lat = append(lat, fmt.Sprintf("%s %s", e, fmtDur(d)))
		}
	}
	if len(lat) > 0 {
		fmt.Fprintf(w, "* gap = end of one run to start of the next; most it exceeded the plan by: %s.\n", strings.Join(lat, ", "))
	}
	for _, n := range r.notes {
		fmt.Fprintln(w, "* "+n)
	}
	fmt.Fprintf(w, "\nfinished in %s\n", r.elapsed.Round(10*time.Millisecond))
}

// fmtDur formats a duration to the millisecond, "-" for a negative one.
func fmtDur(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return ms(d).String()
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
