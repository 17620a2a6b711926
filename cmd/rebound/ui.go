package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/redisstore"
	"github.com/rebound-go/rebound/internal/ui"
)

func uiHelp(fs *flag.FlagSet) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, `Usage: rebound ui [POLICY] [-addr 127.0.0.1:0] [-redis URL -queue NAME ...]

ui serves a page to explore retry policies in a browser and prints its
address. Move the sliders and see each retry's fire time after a failure at
t = 0, the delay, fire time and total wait per attempt (what plan prints),
and where 1000 jobs that failed together retry, with and without jitter
(what herd prints). The policy's text form follows every move, ready to
copy; type into it and a mistake is shown where it is, as the CLI shows it.
POLICY, if given, is the policy the page opens with.

With -redis and -queue, the page also shows each native queue: its jobs by
state, refreshed live, its delayed jobs as a timeline of upcoming runs
(retries waiting their backoff, soonest first), the jobs that failed last
with their errors, every list a page at a time with its total, a lookup by
job ID, and Find (by ID prefix, name, error text and time range, a bounded
number of jobs read per request); and it offers the queue's
operator actions (retry a failed job, run a delayed job now, delete a job,
pause and resume the queue), each behind a confirmation. A Redis URL with
addr= parameters (redis://h1:7000?addr=h2:7000) is read as a Redis Cluster;
with -queue and no -redis, the URL is read from $REBOUND_REDIS_URL, so that
its password need not sit in argv. No message prints a URL's password.

The page loads nothing from the network. It listens on loopback only and
answers only requests addressed to loopback, so other machines and other
sites cannot reach it. To serve it beyond this machine, pass -remote: every
request then needs a token (-token, or one is generated and printed with the
address). -read-only serves the page without its actions: none is shown,
and every request that is not a read is refused, whatever token it
carries. -tls-cert and -tls-key (or -tls-self-signed, for development)
serve it over TLS, and the token's cookie is then marked Secure.

Each job has its own page (/job, opened from any list row, from the
lookup, or by ID): everything the queue stores about it, escaped and
bounded, and its schedule on one time bar, the attempts so far as far as
the queue stores their times and the next fire times of the rule the page
shows. Beside an exponential curve the page draws the linear schedule of
the same base, dashed, and for a chosen attempt the curve's raw value
next to the delay its cap clamps it to. Ctrl-C stops it.

Flags:
`)
		printFlags(w, fs)
		fmt.Fprint(w, "\n"+policyHelp)
	}
}

// uiOptions are ui's flags.
type uiOptions struct {
	addr   string
	redis  string
	queues stringsFlag
	prefix string
	// breakerPrefix is the breakers' key prefix a redrive asks.
	breakerPrefix string
	remote        bool
	token         string
	refresh       time.Duration
	// readOnly serves the page without its actions; tlsCert, tlsKey and
	// tlsSelfSigned serve it over TLS.
	readOnly      bool
	tlsCert       string
	tlsKey        string
	tlsSelfSigned bool
}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (f *stringsFlag) String() string     { return strings.Join(*f, ", ") }
func (f *stringsFlag) Set(s string) error { *f = append(*f, s); return nil }

func uiFlags() (*flag.FlagSet, *uiOptions) {
	fs := newFlagSet("ui")
	o := new(uiOptions)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "`ADDRESS` to listen on, host:port; port 0 picks a free one. A non-loopback host needs -remote")
	fs.StringVar(&o.redis, "redis", "", "Redis `URL` of the native queues to show, e.g. redis://127.0.0.1:6379/0 (default $"+envRedisURL+" when -queue is given)")
	fs.Var(&o.queues, "queue", "`NAME` of a native queue to show (repeat for more); needs -redis")
	fs.StringVar(&o.prefix, "prefix", native.DefaultPrefix, "key `PREFIX` of the native queues")
	fs.StringVar(&o.breakerPrefix, "breaker-prefix", redisstore.DefaultPrefix, "key `PREFIX` of the breakers a redrive asks (as rebound breaker takes it)")
	fs.BoolVar(&o.remote, "remote", false, "allow a non-loopback -addr; every request then needs the access token")
	fs.StringVar(&o.token, "token", "", "access `TOKEN` for -remote, at least "+strconv.Itoa(ui.MinTokenLen)+" characters; empty generates one")
	fs.DurationVar(&o.refresh, "refresh", time.Second, "how often the queue view refreshes its counts, at least "+ui.MinRefresh.String())
	fs.BoolVar(&o.readOnly, "read-only", false, "serve the page without its actions: no action is shown, and every request that is not a read is refused (403)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve over TLS with the PEM certificate in `FILE` (needs -tls-key); the token's cookie is then Secure")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key `FILE` of -tls-cert")
	fs.BoolVar(&o.tlsSelfSigned, "tls-self-signed", false, "serve over TLS with a self-signed certificate made at start (for development; its fingerprint is printed)")
	return fs, o
}

func runUI(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUI(ctx, args, stdout, stderr, nil)
}

// serveUI is the ui command: it serves until ctx ends. ready, if not nil,
// is told the page's address once the server listens.
func serveUI(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(url string)) int {
	fs, o := uiFlags()
	pos, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		uiHelp(fs)(stdout)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	var policy string
	switch len(pos) {
	case 0:
	case 1:
		policy = pos[0]
		if _, ok := parsePolicy("ui", policy, stderr); !ok {
			return exitUsage
		}
	default:
		return usageError(stderr, fs, "got %d arguments %q, want at most one POLICY (quote it: 'exponential(100ms, 2s)')", len(pos), pos)
	}
	// $REBOUND_REDIS_URL stands in for -redis only with -queue: without a
	// queue the page shows no Redis.
	redisURL := connFrom("-redis", o.redis, envRedisURL)
	if len(o.queues) == 0 {
		redisURL = connURL{from: "-redis", raw: o.redis}
	}
	host, _, err := net.SplitHostPort(o.addr)
	switch {
	case err != nil:
		return usageError(stderr, fs, "-addr %q is not host:port, want an address such as 127.0.0.1:8080", o.addr)
	case o.refresh < ui.MinRefresh:
		return usageError(stderr, fs, "-refresh %s is below %s, the shortest interval (every open page samples each queue once per interval), want an interval such as 1s", o.refresh, ui.MinRefresh)
	case len(o.queues) > 0 && redisURL.raw == "":
		return usageError(stderr, fs, "-queue needs -redis URL (or $%s), the Redis the queues live on", envRedisURL)
	case o.redis != "" && len(o.queues) == 0:
		return usageError(stderr, fs, "-redis needs at least one -queue NAME, the native queues to show")
	case !o.remote && !loopbackAddr(host):
		return usageError(stderr, fs, "-addr %s is not a loopback address; the page shows job payloads and errors and can act on queues, so serving it beyond this machine needs -remote (and a token)", o.addr)
	case !o.remote && o.token != "":
		return usageError(stderr, fs, "-token is for -remote; on loopback the page needs no access token")
	case o.remote && o.token != "" && utf8.RuneCountInString(o.token) < ui.MinTokenLen:
		return usageError(stderr, fs, "-token is %d characters, want at least %d", utf8.RuneCountInString(o.token), ui.MinTokenLen)
	}

	tlsConfig, tlsLine, err := uiTLS(o.tlsCert, o.tlsKey, o.tlsSelfSigned, host)
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	cfg := ui.Config{Model: cliModel{}, Remote: o.remote, Token: o.token, Refresh: o.refresh, ErrorLog: log.New(stderr, "rebound ui: ", 0),
		ReadOnly: o.readOnly, TLS: tlsConfig}
	if o.remote && cfg.Token == "" {
		cfg.Token = rand.Text()
	}
	if redisURL.raw != "" {
		rdb, err := redisClient(redisURL.raw)
		if err != nil {
			return usageError(stderr, fs, "%s: %s; want a URL such as redis://127.0.0.1:6379/0", redisURL, redisURL.describe(err))
		}
		defer rdb.Close()
		for _, name := range o.queues {
			if _, err := native.NewQueue(rdb, name, native.WithPrefix(o.prefix)); err != nil {
				return usageError(stderr, fs, "-queue %q: %v", name, err)
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = rdb.Ping(pctx).Err()
		if err != nil {
			cancel()
			fmt.Fprintf(stderr, "rebound ui: Redis at %s does not answer: %s\n", redisAddrs(rdb), redisURL.describe(err))
			return exitFail
		}
		// A sharded queue is served over all its shards, as its layout says.
		for _, name := range o.queues {
			q, err := native.OpenQueue(pctx, rdb, name, native.WithPrefix(o.prefix))
			if err != nil {
				cancel()
				fmt.Fprintf(stderr, "rebound ui: -queue %q: %v\n", name, err)
				return exitFail
			}
			cfg.Queues = append(cfg.Queues, uiQueue{Queue: q, brk: redisstore.New(rdb, breaker.Rules{}, redisstore.Options{Prefix: o.breakerPrefix}), logf: cfg.ErrorLog.Printf})
		}
		cancel()
	}
	srv, err := ui.New(cfg)
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		fmt.Fprintf(stderr, "rebound ui: %v\n", err)
		return exitFail
	}
	page := pageURL(ln.Addr().(*net.TCPAddr), o.remote, tlsConfig != nil, cfg.Token, policy)
	fmt.Fprintf(stdout, "rebound ui: serving %s\n", page)
	if tlsConfig != nil {
		fmt.Fprintf(stdout, "rebound ui: over TLS, with %s\n", tlsLine)
	}
	if o.readOnly {
		fmt.Fprintln(stdout, "rebound ui: read-only: the page takes no actions")
	}
	if o.remote {
		fmt.Fprintf(stdout, "rebound ui: the page needs its token, %s: it is in the address above; keep it secret\n", cfg.Token)
	}
	fmt.Fprintln(stdout, "rebound ui: press Ctrl-C to stop")
	if ready != nil {
		ready(page)
	}
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "rebound ui: %v\n", err)
		return exitFail
	}
	return exitOK
}

// loopbackAddr reports whether host, from -addr, is this machine's
// loopback only. An empty host listens on every interface.
func loopbackAddr(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pageURL is the address to open: on an unspecified IP (every interface)
// it names this machine's host name.
func pageURL(a *net.TCPAddr, remote, overTLS bool, token, policy string) string {
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		host = "localhost"
		if remote {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
	}
	scheme := "http"
	if overTLS {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(a.Port)), Path: "/"}
	v := url.Values{}
	if policy != "" {
		v.Set("policy", policy)
	}
	if remote {
		v.Set("token", token)
	}
	u.RawQuery = v.Encode()
	return u.String()
}

// cliModel computes the page's numbers with the code of the plan and herd
// commands, so the page shows what they print.
type cliModel struct{}

func (cliModel) Curve(q ui.Query) (ui.Curve, error) {
	p, err := backoff.Parse(q.Policy)
	if err != nil {
		return ui.Curve{}, policyError(q.Policy, err)
	}
	c := ui.Curve{
		Policy: p,
		Text:   p.String(),
		Max:    ui.NewDuration(p.Max(), fmtDur(p.Max())),
		Random: random(p),
	}
	if q.Retries > 0 {
		pl := plan{policy: p, key: q.Key, from: q.From, n: q.Retries}
		c.Plan = uiSteps(planRows(pl))
		if base, removed := unjitter(p); removed {
			pl.policy = base
			c.Steady = uiSteps(planRows(pl))
		}
	}
	h := simulate(p, q.HerdJobs, q.HerdAttempt, q.HerdBuckets, "")
	c.Herd = ui.Herd{
		Jobs: h.jobs, Attempt: h.attempt, FirstKey: h.firstKey, LastKey: h.lastKey,
		Bucket: ui.NewDuration(h.width, trimDur(h.width)),
		Edges:  make([]string, h.buckets+1),
		Mean:   h.mean(), MeanText: h.meanText(),
		Note: h.note,
	}
	for b := range c.Herd.Edges {
		c.Herd.Edges[b] = h.edge(b)
	}
	for _, s := range h.series {
		c.Herd.Series = append(c.Herd.Series, ui.HerdSeries{
			Role: s.role, Policy: s.policy.String(), Counts: s.counts,
			Peak: s.peak, PeakWindow: h.window(s.peakAt),
			PeakFactor: strconv.FormatFloat(float64(s.peak)/h.mean(), 'f', 2, 64) + "x",
			First:      ui.NewDuration(s.first, fmtDur(s.first)),
			Last:       ui.NewDuration(s.last, fmtDur(s.last)),
		})
	}
	if len(h.series) == 2 {
		without, with := h.series[0], h.series[1]
		if with.peak < without.peak {
			c.Herd.Verdict = fmt.Sprintf("jitter cuts the peak from %d to %d retries per %s, %.1fx lower.",
				without.peak, with.peak, trimDur(h.width), float64(without.peak)/float64(with.peak))
		} else {
			c.Herd.Verdict = fmt.Sprintf("jitter does not lower the peak here (%d without, %d with, per %s).",
				without.peak, with.peak, trimDur(h.width))
		}
	}
	return c, nil
}

// uiSteps converts plan's schedule and rows for the page.
func uiSteps(steps []backoff.Step, rows [][]string) []ui.Step {
	out := make([]ui.Step, len(steps))
	for i, s := range steps {
		out[i] = ui.Step{
			Attempt: s.Attempt,
			Delay:   ui.NewDuration(s.Delay, rows[i][1]),
			Total:   ui.NewDuration(s.Total, rows[i][2]),
			FiresAt: rows[i][3],
		}
	}
	return out
}

// policyError reports a policy that does not parse with the lines plan
// prints for it, without the command's name and the pointer to -h.
func policyError(text string, err error) *ui.PolicyError {
	var diag strings.Builder
	parsePolicy("plan", text, &diag)
	lines := strings.SplitAfter(diag.String(), "\n")
	pe := &ui.PolicyError{Input: text, Message: strings.TrimSuffix(strings.TrimPrefix(lines[0], "rebound plan: "), "\n")}
	var se *backoff.SyntaxError
	if errors.As(err, &se) {
		pe.Offset = se.Offset
		pe.Column = len([]rune(text[:min(max(se.Offset, 0), len(text))]))
		if len(lines) >= 3 {
			pe.Caret = lines[1] + lines[2]
		}
	}
	return pe
}
