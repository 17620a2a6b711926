package outage

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// Modes are the two ways every engine runs the scenario: its retry rule
// alone (full jitter), and with the breaker.
var Modes = []string{"plain", "breaker"}

// Run runs scenario s on engine e in mode: it enqueues the jobs, starts
// the outage and s.Workers worker processes (exe run with a worker's
// arguments, see RunWorker), waits until every job has ended or the
// deadline passed, stops the workers and measures. log receives the
// workers' standard error.
func Run(ctx context.Context, exe string, e Engine, s Scenario, mode string, log io.Writer) Result {
	r := Result{Engine: e.Name(), Mode: mode, Jobs: s.Jobs}
	if mode == "breaker" {
		r.BudgetRate = s.BudgetRate()
	}
	fail := func(err error) Result {
		r.Err = err.Error()
		return r
	}
	dep, err := NewServer()
	if err != nil {
		return fail(err)
	}
	defer dep.Close()
	base, err := e.Setup(ctx, s, mode)
	defer e.Teardown(context.WithoutCancel(ctx))
	if err != nil {
		return fail(fmt.Errorf("setup: %w", err))
	}
	sp := s.spec(base, e.Name(), mode, dep.URL)

	start := dep.Down(s.Outage)
	var procs []*process
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for range s.Workers {
		p, err := spawn(ctx, exe, sp.Args(), log)
		if err != nil {
			return fail(fmt.Errorf("start a worker: %w", err))
		}
		procs = append(procs, p)
	}

	deadline := start.Add(s.Outage + s.Deadline)
	done := time.Duration(-1)
	for done < 0 {
		completed, exhausted, err := e.Ended(ctx)
		if err == nil && completed+exhausted >= s.Jobs {
			done = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			r.TimedOut = true
			done = time.Since(start)
			break
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, p := range procs {
		p.stop()
	}
	procs = nil
	r.Completed, r.Exhausted, err = e.Ended(ctx)
	if err != nil {
		return fail(fmt.Errorf("count the jobs: %w", err))
	}
	r.Lost = s.Jobs - r.Completed - r.Exhausted
	r.measure(dep.Calls(), s.Outage, done)
	return r
}

// process is a worker process.
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// spawn starts exe with args, its standard error to log.
func spawn(ctx context.Context, exe string, args []string, log io.Writer) (*process, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = log
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stdin: in, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop closes the worker's standard input, which makes it shut down, and
// kills it if it has not exited within 20 seconds.
func (p *process) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// StopOnStdin returns a channel closed when the process's standard input
// ends: how the measuring process tells a worker to stop.
func StopOnStdin() <-chan struct{} {
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	return stop
}
