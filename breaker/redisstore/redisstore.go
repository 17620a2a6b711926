// Package redisstore keeps circuit breakers in Redis, so that every worker
// process sees one breaker (and one retry budget) per dependency: the
// [breaker.Store] for asynq and native users.
//
// The guide to breakers on every adapter: https://github.com/rebound-go/rebound/blob/main/docs/breaker.md
//
// Each dependency's circuit is one hash, "PREFIX:{DEP}:breaker", and the
// jobs its breaker deferred a sorted set, "PREFIX:{DEP}:deferred"; the
// braces are a Redis Cluster hash tag, so both sit in one slot and the
// scripts work on a Cluster too. Every transition (allow, success, failure, neutral) is one atomic
// Lua script, one round trip per job event, run on the server's clock
// (TIME), so the fleet agrees on time even when its hosts do not. The
// scripts run the pure core's state machine (package breaker) number for
// number; the cool-down, a curve, is computed in Go and passed as a
// literal, never in Lua. A property test holds the scripts to the core's
// decisions on random event sequences, on real Redis, on miniredis and on
// a Cluster.
//
// Redis being down must not stop the fleet: when Allow returns an error,
// run the job as if the breaker were closed.
package redisstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/internal/safe"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script loads lua/NAME.lua behind the shared helpers of lua/lib.lua.
func script(name string) *redis.Script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic("redisstore: embedded lua/lib.lua missing: " + err.Error())
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redisstore: embedded lua/" + name + ".lua missing: " + err.Error())
	}
	return redis.NewScript(string(lib) + "\n" + string(body))
}

// The scripts, one transition each.
var (
	scriptAllow   = script("allow")
	scriptSuccess = script("success")
	scriptFailure = script("failure")
	scriptNeutral = script("neutral")
	scriptStatus  = script("status")
)

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "rebound"

// Options configure a Store.
type Options struct {
	// Prefix starts every key; default "rebound".
	Prefix string
	// Now, when set, replaces the server's clock: the store passes its
	// time to every script. For tests and simulations; leave it nil in
	// production.
	Now func() time.Time
	// Timeout bounds each call of the store (Allow, Record, Status,
	// List): past it the call returns an error whatever the server does,
	// even with a client that does not honour its context. 0 means
	// breaker.DefaultStoreTimeout (1s); a negative Timeout leaves calls
	// bounded only by their context. A worker waits that long at most
	// before a bound job runs and again after it ran.
	Timeout time.Duration
}

// Store is a [breaker.Store] on Redis. Build it with [New]; it is safe for
// concurrent use, and any number of Stores in any number of processes may
// share one breaker.
type Store struct {
	rdb    redis.UniversalClient
	rules  breaker.Rules
	prefix string
	now    func() time.Time
	// timeout bounds each call; 0 leaves it to the context.
	timeout time.Duration
	// trips remembers each dependency's trips as the scripts last
	// reported them: the failure script needs the cool-down of the next
	// trip, and asks again with the right one when this is stale.
	trips sync.Map // string -> int64
	texts sync.Map // string -> string, each dependency's rule text
}

var _ breaker.Store = (*Store)(nil)

// Allow implements [breaker.Store], bounded by the store's Timeout.
func (s *Store) Allow(ctx context.Context, dep string, job breaker.Job) (breaker.Verdict, error) {
	return safe.Within(ctx, s.timeout, "redisstore: allow "+dep, func(ctx context.Context) (breaker.Verdict, error) { return s.allow(ctx, dep, job) })
}

// Record implements [breaker.Store], bounded by the store's Timeout.
func (s *Store) Record(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) (breaker.Transition, error) {
	return safe.Within(ctx, s.timeout, "redisstore: record "+dep, func(ctx context.Context) (breaker.Transition, error) { return s.record(ctx, dep, t, o) })
}

// Status implements [breaker.Store], bounded by the store's Timeout.
func (s *Store) Status(ctx context.Context, dep string) (breaker.Status, error) {
	return safe.Within(ctx, s.timeout, "redisstore: status "+dep, func(ctx context.Context) (breaker.Status, error) { return s.statusOf(ctx, dep) })
}

// List implements [breaker.Store], bounded by the store's Timeout.
func (s *Store) List(ctx context.Context) ([]breaker.Status, error) {
	return safe.Within(ctx, s.timeout, "redisstore: list", func(ctx context.Context) ([]breaker.Status, error) { return s.list(ctx) })
}

// New returns a store on rdb (a client, a cluster client or a ring shard
// holding every key) whose dependencies rules guards.
func New(rdb redis.UniversalClient, rules breaker.Rules, o Options) *Store {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	return &Store{rdb: rdb, rules: rules.Clone(), prefix: o.Prefix, now: o.Now, timeout: breaker.StoreTimeout(o.Timeout)}
}

// Key returns the key of dep's circuit under prefix: "PREFIX:{DEP}:breaker".
func Key(prefix, dep string) string { return prefix + ":{" + dep + "}:breaker" }

// DeferredKey returns the key of the sorted set of the jobs dep's breaker
// deferred: "PREFIX:{DEP}:deferred", in the circuit's hash slot.
func DeferredKey(prefix, dep string) string { return prefix + ":{" + dep + "}:deferred" }

// allow is Allow without the bound of the store's Timeout.
func (s *Store) allow(ctx context.Context, dep string, job breaker.Job) (breaker.Verdict, error) {
	if err := breaker.CheckName(dep); err != nil {
		return breaker.Verdict{}, err
	}
	if err := breaker.CheckJobID(job.ID); err != nil {
		return breaker.Verdict{}, err
	}
	b, ok := s.rules.For(dep)
	if !ok {
		return breaker.Verdict{Decision: breaker.Run}, nil
	}
	args, err := s.args(dep, b)
	if err != nil {
		return breaker.Verdict{}, err
	}
	kind := 0
	if job.Kind == breaker.Retry {
		kind = 1
	}
	keys := []string{Key(s.prefix, dep), DeferredKey(s.prefix, dep)}
	r, err := ints(scriptAllow.Run(ctx, s.rdb, keys, append(args, kind, job.ID, breaker.Remember.Milliseconds())...).Slice())
	if err != nil || len(r) != 7 {
		return breaker.Verdict{}, fmt.Errorf("redisstore: allow %s: %w", dep, replyError(err, r))
	}
	v := breaker.Verdict{
		Decision:   breaker.Decision(r[0]),
		Transition: breaker.Transition{From: breaker.State(r[4]), To: breaker.State(r[5])},
	}
	if v.Runs() {
		v.Ticket = breaker.Ticket{Gen: r[2], Probe: r[3] == 1, Admitted: true, Lease: r[6]}
	} else {
		v.Until = time.UnixMilli(r[1])
	}
	return v, nil
}

// record is Record without the bound of the store's Timeout.
func (s *Store) record(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) (breaker.Transition, error) {
	if err := breaker.CheckName(dep); err != nil {
		return breaker.Transition{}, err
	}
	b, ok := s.rules.For(dep)
	if !ok {
		return breaker.Transition{}, nil
	}
	args, err := s.args(dep, b)
	if err != nil {
		return breaker.Transition{}, err
	}
	args = append(args, t.Gen, flag(t.Probe), flag(t.Admitted), t.Lease)
	keys := []string{Key(s.prefix, dep)}
	sc := scriptNeutral
	switch o {
	case breaker.Success:
		sc = scriptSuccess
	case breaker.Failure:
		sc = scriptFailure
	}
	if sc != scriptFailure {
		r, err := ints(sc.Run(ctx, s.rdb, keys, args...).Slice())
		if err != nil || len(r) != 2 {
			return breaker.Transition{}, fmt.Errorf("redisstore: record %s %s: %w", o, dep, replyError(err, r))
		}
		return breaker.Transition{From: breaker.State(r[0]), To: breaker.State(r[1])}, nil
	}
	hint := int64(0)
	if v, ok := s.trips.Load(dep); ok {
		hint = v.(int64)
	}
	// A stale hint costs one more round trip; more than a few in a row
	// means trips move faster than we can ask, which they cannot.
	for range 5 {
		next := min(hint+1, breaker.MaxCount)
		// A cool-down policy that panics matters only if this failure
		// trips the breaker: -1 tells the script it has no cool-down.
		cd, cdErr := safe.Value("redisstore: cooldown", time.Duration(0), func() time.Duration { return b.Cooldown(dep, next) })
		arg := millisCeil(cd)
		if cdErr != nil {
			arg = -1
		}
		r, err := ints(sc.Run(ctx, s.rdb, keys, append(args, hint, arg)...).Slice())
		if err != nil || len(r) != 2 {
			return breaker.Transition{}, fmt.Errorf("redisstore: record failure %s: %w", dep, replyError(err, r))
		}
		if r[0] == -1 {
			if cdErr != nil && r[1] == hint {
				return breaker.Transition{}, cdErr
			}
			hint = r[1]
			s.trips.Store(dep, hint)
			continue
		}
		switch {
		case breaker.State(r[1]) == breaker.Open && r[0] != int64(breaker.Open):
			s.trips.Store(dep, next)
		case breaker.State(r[1]) == breaker.Closed && hint != 0:
			s.trips.Store(dep, int64(0))
		}
		return breaker.Transition{From: breaker.State(r[0]), To: breaker.State(r[1])}, nil
	}
	return breaker.Transition{}, fmt.Errorf("redisstore: record failure %s: trips changed under five tries in a row", dep)
}

// args returns ARGV 1-12 of every script for b.
func (s *Store) args(dep string, b breaker.Breaker) ([]any, error) {
	now := ""
	if s.now != nil {
		t, err := safe.Value("redisstore: clock", time.Time{}, s.now)
		if err != nil {
			return nil, err
		}
		now = strconv.FormatInt(min(max(t.UnixMilli(), 0), breaker.MaxCount), 10)
	}
	u := b.Units()
	return []any{now, u.Failures, u.Rate, u.MinCalls, max(u.Slice, 1), u.Probes, u.Successes, u.Lease,
		u.Ratio, u.Floor, u.Burst, s.text(dep, b)}, nil
}

// statusOf is Status without the bound of the store's Timeout.
func (s *Store) statusOf(ctx context.Context, dep string) (breaker.Status, error) {
	if err := breaker.CheckName(dep); err != nil {
		return breaker.Status{}, err
	}
	return s.status(ctx, dep)
}

func (s *Store) status(ctx context.Context, dep string) (breaker.Status, error) {
	now := ""
	if s.now != nil {
		t, err := safe.Value("redisstore: clock", time.Time{}, s.now)
		if err != nil {
			return breaker.Status{}, err
		}
		now = strconv.FormatInt(min(max(t.UnixMilli(), 0), breaker.MaxCount), 10)
	}
	raw, err := scriptStatus.Run(ctx, s.rdb, []string{Key(s.prefix, dep)}, now).Slice()
	if err != nil {
		return breaker.Status{}, fmt.Errorf("redisstore: status %s: %w", dep, err)
	}
	return s.decode(dep, raw)
}

// decode turns the status script's reply into a Status.
func (s *Store) decode(dep string, raw []any) (breaker.Status, error) {
	const fields = 10 + 3*breaker.Buckets
	if len(raw) != 3+fields {
		return breaker.Status{}, fmt.Errorf("redisstore: status %s: %d values in the reply, want %d", dep, len(raw), 3+fields)
	}
	at, ok := raw[0].(int64)
	rule, ok2 := raw[1].(string)
	if !ok || !ok2 {
		return breaker.Status{}, fmt.Errorf("redisstore: status %s: reply starts %T, %T, want the time and the rule", dep, raw[0], raw[1])
	}
	n := make([]int64, fields)
	for i := range n {
		str, _ := raw[2+i].(string)
		v, err := strconv.ParseInt(str, 10, 64)
		if err != nil {
			return breaker.Status{}, fmt.Errorf("redisstore: status %s: field %d is %q, want a whole number", dep, i, str)
		}
		n[i] = v
	}
	c := breaker.Circuit{
		State: breaker.State(n[0]), Gen: n[1], Trips: n[2], Failures: n[3], Until: n[4],
		Probes: n[5], Successes: n[6], Lease: n[7], Budget: breaker.Tokens{Units: n[8], At: n[9]},
	}
	for i := range c.Window {
		c.Window[i] = breaker.Bucket{Epoch: n[10+3*i], Successes: n[11+3*i], Failures: n[12+3*i]}
	}
	leases, _ := raw[2+fields].(string)
	for _, f := range strings.Fields(leases) {
		l, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return breaker.Status{}, fmt.Errorf("redisstore: status %s: a probe's lease is %q, want a whole number", dep, f)
		}
		c.Leases = append(c.Leases, l)
	}
	b, ok := s.rules.For(dep)
	if !ok && rule != "" {
		// A dependency this store does not guard: describe it with the
		// rule that wrote it, as the CLI does.
		b, _ = breaker.Parse(rule)
	}
	st, err := safe.Value("redisstore: status", breaker.Status{}, func() breaker.Status { return b.Status(dep, c, time.UnixMilli(at)) })
	if err != nil {
		return breaker.Status{}, err
	}
	if st.Rule == "" {
		st.Rule = rule
	}
	return st, nil
}

// list is List without the bound of the store's Timeout: it scans every master for the prefix's
// circuits.
func (s *Store) list(ctx context.Context) ([]breaker.Status, error) {
	deps, err := Dependencies(ctx, s.rdb, s.prefix)
	if err != nil {
		return nil, err
	}
	out := make([]breaker.Status, 0, len(deps))
	for _, dep := range deps {
		st, err := s.status(ctx, dep)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// Dependencies returns the names of the dependencies with a circuit under
// prefix, sorted, scanning every master of a cluster.
func Dependencies(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]string, error) {
	pattern := escapeGlob(prefix) + ":{*}:breaker"
	var (
		mu   sync.Mutex
		deps []string
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			k := it.Val()
			dep, ok := strings.CutPrefix(k, prefix+":{")
			if dep, ok2 := strings.CutSuffix(dep, "}:breaker"); ok && ok2 && breaker.CheckName(dep) == nil {
				mu.Lock()
				deps = append(deps, dep)
				mu.Unlock()
			}
		}
		return it.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: list %s: %w", prefix, err)
	}
	slices.Sort(deps)
	return slices.Compact(deps), nil
}

// escapeGlob quotes the characters SCAN's MATCH pattern treats specially.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func millisCeil(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// ints reads a script's reply of whole numbers.
func ints(raw []any, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(raw))
	for i, v := range raw {
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("reply value %d is %T, want a whole number", i, v)
		}
		out[i] = n
	}
	return out, nil
}

func replyError(err error, r []int64) error {
	if err != nil {
		return err
	}
	return errors.New("reply of " + strconv.Itoa(len(r)) + " values, want more")
}

// text returns the text form of dep's rule, computed once: a cool-down
// policy of the user's whose String panics gives "" rather than taking the
// process down.
func (s *Store) text(dep string, b breaker.Breaker) string {
	if v, ok := s.texts.Load(dep); ok {
		return v.(string)
	}
	t, _ := safe.Value("redisstore: rule text", "", b.String)
	s.texts.Store(dep, t)
	return t
}
