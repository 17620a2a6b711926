package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/bench/bullmq"
)

// BullMQ runs as a peer through bench/bullmq/bench.js on Node, against the
// same kind of private redis-server as the native queue and asynq: the Go
// benchmark starts the server, launches node with the run's settings, reads
// the server's INFO around the timed part (node signals "ready" before it and
// reports "done" after it), and reports the figures under the same metric
// names as the Go engines' rows.

// bullmqFolder is the Node project of the BullMQ side, relative to this
// package.
const bullmqFolder = "bullmq"

// bullmqFound is what looking for node and BullMQ found, once.
type bullmqFound struct {
	once sync.Once
	node string
	why  string
}

var bullmqState bullmqFound

// bullmqNode returns the node binary, or skips b with the reason BullMQ
// cannot be measured: node missing or too old, the locked packages not
// installed (the report installs them with npm ci), or the reason the
// report gave (bullmq.UnavailableEnv).
func bullmqNode(b *testing.B) string {
	b.Helper()
	s := bullmqNodeState(b)
	if s.why != "" {
		b.Skipf("BullMQ not measured: %s", s.why)
	}
	return s.node
}

// bullmqNodeState looks for node and the installed BullMQ once.
func bullmqNodeState(b *testing.B) *bullmqFound {
	b.Helper()
	s := &bullmqState
	s.once.Do(func() {
		if why := os.Getenv(bullmq.UnavailableEnv); why != "" {
			s.why = why
			return
		}
		node, nodeVersion, err := bullmq.Node(context.Background())
		if err != nil {
			s.why = err.Error()
			return
		}
		v, err := bullmq.Installed(bullmqFolder)
		if err != nil {
			s.why = "bench/bullmq: " + err.Error() + " (go run ./bench/cmd/report does)"
			return
		}
		s.node = node
		b.Logf("BullMQ %s on node %s", v, nodeVersion)
	})
	return s
}

// bullmqMissing says why BullMQ cannot run here, or "" when it can.
func bullmqMissing(b *testing.B) string {
	b.Helper()
	return bullmqNodeState(b).why
}

// A bullmqRun is one run of bench.js.
type bullmqRun struct {
	b      *testing.B
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
	// exited is closed once the process has exited, with its status in
	// exitErr.
	exited  chan struct{}
	exitErr error
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// startBullMQ launches bench.js with settings (mode and the workload's
// figures) against rdb's server. The process is killed when b ends, if it
// has not exited by then.
func startBullMQ(b *testing.B, rdb *redis.Client, settings map[string]any) *bullmqRun {
	b.Helper()
	node := bullmqNode(b)
	addr := rdb.Options().Addr
	_, port, ok := strings.Cut(addr, ":")
	if !ok {
		b.Fatalf("redis address %q has no port", addr)
	}
	settings["port"] = json.Number(port)
	arg, err := json.Marshal(settings)
	if err != nil {
		b.Fatal(err)
	}
	r := &bullmqRun{b: b, lines: make(chan string, 16), stderr: &syncBuffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(node, bullmq.Script, string(arg))
	r.cmd.Dir = bullmqFolder
	r.cmd.Stderr = r.stderr
	dieWithBench(r.cmd)
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		b.Fatalf("start node %s: %v", bullmq.Script, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20) // lateness sends 10k figures on one line
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
		r.exitErr = r.cmd.Wait()
		close(r.exited)
	}()
	b.Cleanup(func() {
		_ = r.stdin.Close()
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			_ = r.cmd.Process.Kill()
		}
	})
	return r
}

// next waits up to timeout for the event named want and decodes its fields
// into v (nil: ignore them). An "error" event, an early exit or the timeout
// fails b with what the script said.
func (r *bullmqRun) next(want string, timeout time.Duration, v any) {
	r.b.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				<-r.exited
				r.b.Fatalf("bench.js exited before %q: %v; stderr: %s", want, r.exitErr, lastLines(r.stderr.String(), 5))
			}
			if !strings.HasPrefix(line, "{") {
				r.b.Logf("bench.js: %s", line)
				continue
			}
			var ev struct {
				Event string `json:"event"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				r.b.Logf("bench.js: %s", line)
				continue
			}
			switch ev.Event {
			case want:
				if v != nil {
					if err := json.Unmarshal([]byte(line), v); err != nil {
						r.b.Fatalf("bench.js %q event: %v", want, err)
					}
				}
				return
			case "error":
				r.b.Fatalf("bench.js failed: %s", ev.Error)
			default:
				r.b.Fatalf("bench.js sent %q, want %q", ev.Event, want)
			}
		case <-deadline:
			r.b.Fatalf("bench.js sent no %q within %s; stderr: %s", want, timeout, lastLines(r.stderr.String(), 5))
		}
	}
}

// say sends one word to the script.
func (r *bullmqRun) say(word string) {
	r.b.Helper()
	if _, err := fmt.Fprintln(r.stdin, word); err != nil {
		r.b.Fatalf("bench.js: send %q: %v", word, err)
	}
}

// finish tells the script to close its connections and waits for it to
// exit cleanly.
func (r *bullmqRun) finish() {
	r.b.Helper()
	r.say("stop")
	for range r.lines {
	}
	select {
	case <-r.exited:
		if r.exitErr != nil {
			r.b.Fatalf("bench.js: %v; stderr: %s", r.exitErr, lastLines(r.stderr.String(), 5))
		}
	case <-time.After(30 * time.Second):
		r.b.Fatalf("bench.js did not exit within 30s of stop")
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// bullmqTimed is what bench.js reports for a timed part.
type bullmqTimed struct {
	Seconds float64 `json:"seconds"`
	CPUUs   float64 `json:"cpu_us"`
}

// benchThroughputBullMQ is one throughput round of BullMQ: the jobs fail
// once and retry after delay (attempts 2, backoff fixed), concurrency
// handlers in one Worker; redis-us/job from INFO around the timed part,
// worker-us/job the node process's CPU over it.
func benchThroughputBullMQ(b *testing.B, concurrency int, delay time.Duration) throughputRound {
	b.StopTimer()
	defer b.StartTimer()
	bullmqNode(b)
	rdb := privateRedis(b)
	r := startBullMQ(b, rdb, map[string]any{"mode": "throughput", "jobs": throughputJobs, "concurrency": concurrency, "delayMs": delay.Milliseconds()})
	r.next("ready", 2*time.Minute, nil)
	stats0 := readCommandStats(b, rdb)
	redis0 := redisCPUSeconds(b, rdb)
	r.say("go")
	var t bullmqTimed
	r.next("done", 3*time.Minute, &t)
	redis1 := redisCPUSeconds(b, rdb)
	stats1 := readCommandStats(b, rdb)
	delete(stats1, "ctxsw:self") // the worker is node, not this process
	logCommandStats(b, stats0, stats1, throughputJobs)
	r.finish()
	return throughputRound{
		jobsPerSec:     float64(throughputJobs) / t.Seconds,
		redisUsPerJob:  (redis1 - redis0) * 1e6 / float64(throughputJobs),
		workerUsPerJob: t.CPUUs / float64(throughputJobs),
	}
}

// benchLatenessBullMQ runs one lateness measurement of BullMQ (attempts 2,
// backoff fixed 100ms, 32 handlers) with its jobs arriving on the schedule
// of the other engines' loads.
func benchLatenessBullMQ(b *testing.B, load latenessLoad) {
	bullmqNode(b)
	rdb := privateRedis(b)
	r := startBullMQ(b, rdb, map[string]any{"mode": "lateness", "jobs": load.jobs, "spreadMs": load.spread.Milliseconds(),
		"delayMs": latenessDelay.Milliseconds(), "concurrency": latenessConcurrency})
	r.next("ready", time.Minute, nil)
	r.say("go")
	var res struct {
		LateMs []float64 `json:"late_ms"`
	}
	r.next("done", 3*time.Minute, &res)
	r.finish()
	if len(res.LateMs) != load.jobs {
		b.Fatalf("bench.js reported %d retries, want %d", len(res.LateMs), load.jobs)
	}
	late := make([]time.Duration, len(res.LateMs))
	for i, ms := range res.LateMs {
		late[i] = time.Duration(ms * float64(time.Millisecond))
	}
	reportLateness(b, late)
}

// benchMemoryBullMQ measures BullMQ's bytes per job waiting for its retry
// as benchMemoryNative does (attempts 3, backoff fixed 1h, 50 handlers);
// stackTraceLimit, when not negative, is the jobs' stackTraceLimit option
// (BullMQ stores the failed attempt's stack trace with the job).
func benchMemoryBullMQ(b *testing.B, payload []byte, stackTraceLimit int) {
	bullmqNode(b)
	rdb := privateRedis(b)
	settings := map[string]any{"mode": "memory", "jobs": memoryJobs, "payload": string(payload)}
	if stackTraceLimit >= 0 {
		settings["stackTraceLimit"] = stackTraceLimit
	}
	r := startBullMQ(b, rdb, settings)
	r.next("ready", time.Minute, nil)
	before := dataMemory(b, rdb)
	r.say("go")
	r.next("done", 3*time.Minute, nil)
	after := dataMemory(b, rdb)
	r.finish()
	reportMemory(b, before, after)
}

// benchEnqueueBullMQ enqueues enqueueJobs jobs with BullMQ's add from
// producers concurrent loops (how "add") or with addBulk in chunks
// of enqueueChunk (how "addbulk").
func benchEnqueueBullMQ(how string) func(b *testing.B, producers int) enqueueRound {
	return func(b *testing.B, producers int) enqueueRound {
		bullmqNode(b)
		rdb := privateRedis(b)
		r := startBullMQ(b, rdb, map[string]any{"mode": "enqueue", "how": how, "jobs": enqueueJobs,
			"parallel": producers, "chunk": enqueueChunk, "payload": string(enqueuePayload)})
		r.next("ready", time.Minute, nil)
		redis0 := redisCPUSeconds(b, rdb)
		r.say("go")
		var t bullmqTimed
		r.next("done", 3*time.Minute, &t)
		redis1 := redisCPUSeconds(b, rdb)
		r.finish()
		return enqueueRound{
			jobsPerSec:     float64(enqueueJobs) / t.Seconds,
			redisUsPerJob:  (redis1 - redis0) * 1e6 / float64(enqueueJobs),
			clientUsPerJob: t.CPUUs / float64(enqueueJobs),
		}
	}
}
