// Package pgstore keeps circuit breakers in a PostgreSQL table, so that
// every worker process sees one breaker (and one retry budget) per
// dependency: the [breaker.Store] for River users, in the database and
// schema River already uses.
//
// The guide to breakers on every adapter: https://github.com/rebound-go/rebound/blob/main/docs/breaker.md
//
// Each dependency is one row of the table [Migrate] creates. A transition
// that changes the circuit runs in one transaction: it locks the row,
// applies the pure core's transition (package breaker) in Go and writes
// the row back, so the decisions are the core's by construction. A
// question that changes nothing (a fresh run through a closed breaker, the
// common case) is one plain read. Time is the database server's clock, so
// the fleet agrees on time even when its hosts do not.
//
// PostgreSQL being down must not stop the fleet: when Allow returns an
// error, run the job as if the breaker were closed.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/internal/safe"
)

// Table is the name of the table in the schema.
const Table = "rebound_breaker"

// Execer runs a statement: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Migrate creates the breaker tables in schema ("" for the search path's
// first schema), if they are not there yet: one row per dependency, and
// the jobs each breaker deferred. Run it with the application's
// other migrations; it is safe to run again, and a table made by an
// earlier version needs it again (it adds the column of the probes'
// leases, one per probe).
func Migrate(ctx context.Context, db Execer, schema string) error {
	_, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+tableName(schema)+` (
	dependency       text PRIMARY KEY,
	state            smallint NOT NULL DEFAULT 0,
	gen              bigint NOT NULL DEFAULT 0,
	trips            bigint NOT NULL DEFAULT 0,
	failures         bigint NOT NULL DEFAULT 0,
	until_ms         bigint NOT NULL DEFAULT 0,
	probes           bigint NOT NULL DEFAULT 0,
	successes        bigint NOT NULL DEFAULT 0,
	lease_ms         bigint NOT NULL DEFAULT 0,
	tokens           bigint NOT NULL DEFAULT 0,
	tokens_at_ms     bigint NOT NULL DEFAULT 0,
	window_epoch     bigint[] NOT NULL DEFAULT '{}',
	window_successes bigint[] NOT NULL DEFAULT '{}',
	window_failures  bigint[] NOT NULL DEFAULT '{}',
	rule             text NOT NULL DEFAULT '',
	updated_at       timestamptz NOT NULL DEFAULT now(),
	leases_ms        bigint[] NOT NULL DEFAULT '{}'
)`)
	if err != nil {
		return fmt.Errorf("pgstore: create table %s: %w", tableName(schema), err)
	}
	// A table made before each probe had a lease of its own.
	_, err = db.Exec(ctx, `ALTER TABLE `+tableName(schema)+` ADD COLUMN IF NOT EXISTS leases_ms bigint[] NOT NULL DEFAULT '{}'`)
	if err != nil {
		return fmt.Errorf("pgstore: add the probes' leases to %s: %w", tableName(schema), err)
	}
	_, err = db.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+deferredName(schema)+` (
	dependency text NOT NULL,
	job        text NOT NULL,
	forget_ms  bigint NOT NULL,
	PRIMARY KEY (dependency, job)
)`)
	if err != nil {
		return fmt.Errorf("pgstore: create table %s: %w", deferredName(schema), err)
	}
	return nil
}

// DeferredTable is the name of the table of the jobs a breaker deferred.
const DeferredTable = "rebound_breaker_deferred"

func deferredName(schema string) string {
	if schema == "" {
		return pgx.Identifier{DeferredTable}.Sanitize()
	}
	return pgx.Identifier{schema, DeferredTable}.Sanitize()
}

func tableName(schema string) string {
	if schema == "" {
		return pgx.Identifier{Table}.Sanitize()
	}
	return pgx.Identifier{schema, Table}.Sanitize()
}

// Options configure a Store.
type Options struct {
	// Schema holds the table; "" means the search path.
	Schema string
	// Now, when set, replaces the database's clock. For tests and
	// simulations; leave it nil in production.
	Now func() time.Time
	// Timeout bounds each call of the store (Allow, Record, Status,
	// List): past it the call returns an error whatever the server does,
	// even with a client that does not honour its context. 0 means
	// breaker.DefaultStoreTimeout (1s); a negative Timeout leaves calls
	// bounded only by their context. A worker waits that long at most
	// before a bound job runs and again after it ran.
	Timeout time.Duration
}

// Store is a [breaker.Store] on PostgreSQL. Build it with [New]; it is
// safe for concurrent use, and any number of Stores in any number of
// processes may share one breaker.
type Store struct {
	pool  *pgxpool.Pool
	rules breaker.Rules
	now   func() time.Time
	// timeout bounds each call; 0 leaves it to the context.
	timeout time.Duration
	table   string

	qRead, qLock, qWrite, qList     string
	qRemembered, qRemember, qForget string
	texts                           sync.Map // string -> string, each dependency's rule text
}

var _ breaker.Store = (*Store)(nil)

// Allow implements [breaker.Store], bounded by the store's Timeout.
func (s *Store) Allow(ctx context.Context, dep string, job breaker.Job) (breaker.Verdict, error) {
	return safe.Within(ctx, s.timeout, "pgstore: allow "+dep, func(ctx context.Context) (breaker.Verdict, error) { return s.allow(ctx, dep, job) })
}

// Record implements [breaker.Store], bounded by the store's Timeout.
func (s *Store) Record(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) (breaker.Transition, error) {
	return safe.Within(ctx, s.timeout, "pgstore: record "+dep, func(ctx context.Context) (breaker.Transition, error) { return s.record(ctx, dep, t, o) })
}

// Status implements [breaker.Store], bounded by the store's Timeout.
func (s *Store) Status(ctx context.Context, dep string) (breaker.Status, error) {
	return safe.Within(ctx, s.timeout, "pgstore: status "+dep, func(ctx context.Context) (breaker.Status, error) { return s.statusOf(ctx, dep) })
}

// List implements [breaker.Store], bounded by the store's Timeout.
func (s *Store) List(ctx context.Context) ([]breaker.Status, error) {
	return safe.Within(ctx, s.timeout, "pgstore: list", func(ctx context.Context) ([]breaker.Status, error) { return s.list(ctx) })
}

const columns = `state, gen, trips, failures, until_ms, probes, successes, lease_ms, tokens, tokens_at_ms,
	window_epoch, window_successes, window_failures, rule, leases_ms`

const clockMillis = `floor(extract(epoch from clock_timestamp()) * 1000)::bigint`

// New returns a store on pool whose dependencies rules guards. The table
// must exist: see [Migrate].
func New(pool *pgxpool.Pool, rules breaker.Rules, o Options) *Store {
	t, d := tableName(o.Schema), deferredName(o.Schema)
	return &Store{
		pool: pool, rules: rules.Clone(), now: o.Now, table: t, timeout: breaker.StoreTimeout(o.Timeout),
		qRead: `SELECT ` + clockMillis + `, r.* FROM (SELECT 1) one LEFT JOIN LATERAL
	(SELECT ` + columns + ` FROM ` + t + ` WHERE dependency = $1) r ON true`,
		qRemembered: `SELECT ` + clockMillis + `, EXISTS (SELECT 1 FROM ` + d + ` WHERE dependency = $1 AND job = $2
	AND forget_ms > coalesce($3, ` + clockMillis + `)), r.* FROM (SELECT 1) one LEFT JOIN LATERAL
	(SELECT ` + columns + ` FROM ` + t + ` WHERE dependency = $1) r ON true`,
		// Remembering a job also forgets the dependency's other jobs
		// whose time is up.
		qRemember: `WITH gone AS (DELETE FROM ` + d + ` WHERE dependency = $1 AND job <> $2 AND forget_ms <= $4)
	INSERT INTO ` + d + ` (dependency, job, forget_ms) VALUES ($1, $2, $3)
	ON CONFLICT (dependency, job) DO UPDATE SET forget_ms = excluded.forget_ms`,
		qForget: `DELETE FROM ` + d + ` WHERE dependency = $1 AND job = $2`,
		// An upsert locks the row, creating it if need be, in one statement.
		qLock: `INSERT INTO ` + t + ` (dependency) VALUES ($1)
	ON CONFLICT (dependency) DO UPDATE SET dependency = excluded.dependency
	RETURNING ` + clockMillis + `, ` + columns,
		qWrite: `UPDATE ` + t + ` SET state = $2, gen = $3, trips = $4, failures = $5, until_ms = $6,
	probes = $7, successes = $8, lease_ms = $9, tokens = $10, tokens_at_ms = $11,
	window_epoch = $12, window_successes = $13, window_failures = $14, rule = $15, leases_ms = $16, updated_at = now()
	WHERE dependency = $1`,
		qList: `SELECT ` + clockMillis + `, dependency, ` + columns + ` FROM ` + t + ` ORDER BY dependency`,
	}
}

// row is a circuit as the table holds it.
type row struct {
	now    int64
	exists bool
	c      breaker.Circuit
	rule   string
}

// scan reads a row of now and the columns; a missing row reads as the
// zero circuit.
func scan(r pgx.Row, dep *string, remembered *bool) (row, error) {
	var (
		now                          int64
		state                        *int16
		gen, trips, fails, until     *int64
		probes, succ, lease, tok, at *int64
		ep, ws, wf, leases           []int64
		rule                         *string
	)
	dest := []any{&now}
	if remembered != nil {
		dest = append(dest, remembered)
	}
	if dep != nil {
		dest = append(dest, dep)
	}
	dest = append(dest, &state, &gen, &trips, &fails, &until, &probes, &succ, &lease, &tok, &at, &ep, &ws, &wf, &rule, &leases)
	if err := r.Scan(dest...); err != nil {
		return row{}, err
	}
	out := row{now: now, exists: state != nil}
	if !out.exists {
		return out, nil
	}
	v := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	out.c = breaker.Circuit{
		State: breaker.State(*state), Gen: v(gen), Trips: v(trips), Failures: v(fails), Until: v(until),
		Probes: v(probes), Successes: v(succ), Lease: v(lease), Budget: breaker.Tokens{Units: v(tok), At: v(at)},
	}
	if len(leases) > 0 {
		out.c.Leases = leases
	}
	for i := range out.c.Window {
		if i < len(ep) && i < len(ws) && i < len(wf) {
			out.c.Window[i] = breaker.Bucket{Epoch: ep[i], Successes: ws[i], Failures: wf[i]}
		}
	}
	if rule != nil {
		out.rule = *rule
	}
	return out, nil
}

// clock returns now in Unix ms: the injected clock's, or the database's
// (dbNow).
func (s *Store) clock(dbNow int64) (time.Time, error) {
	if s.now == nil {
		return time.UnixMilli(dbNow), nil
	}
	return safe.Value("pgstore: clock", time.Time{}, s.now)
}

// allow is Allow without the bound of the store's Timeout.
func (s *Store) allow(ctx context.Context, dep string, job breaker.Job) (breaker.Verdict, error) {
	if err := breaker.CheckJobID(job.ID); err != nil {
		return breaker.Verdict{}, err
	}
	var (
		v          breaker.Verdict
		remembered bool
		at         time.Time
	)
	err := s.transition(ctx, dep, job.ID, &remembered, func(b breaker.Breaker, c *breaker.Circuit, now time.Time) error {
		k := job.Kind
		if remembered {
			k = breaker.Retry
		}
		v, at = b.Allow(c, now, k), now
		return nil
	}, func() { v = breaker.Verdict{Decision: breaker.Run} })
	if err == nil && job.ID != "" && !at.IsZero() {
		// The job's deferral is remembered beside the circuit, not in its
		// transaction: it is a hint for the job's next run, and a lost one
		// costs that run a token, not a wrong decision.
		switch {
		case !v.Runs():
			_, err = s.pool.Exec(ctx, s.qRemember, dep, job.ID, v.Until.Add(breaker.Remember).UnixMilli(), at.UnixMilli())
		case remembered:
			_, err = s.pool.Exec(ctx, s.qForget, dep, job.ID)
		}
	}
	if err != nil {
		return breaker.Verdict{}, fmt.Errorf("pgstore: allow %s: %w", dep, noTable(err))
	}
	return v, nil
}

// record is Record without the bound of the store's Timeout.
func (s *Store) record(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) (breaker.Transition, error) {
	var tr breaker.Transition
	err := s.transition(ctx, dep, "", nil, func(b breaker.Breaker, c *breaker.Circuit, now time.Time) error {
		// The cool-down policy is the user's: it must not take the
		// process down.
		return safe.Call("pgstore: record", func() { tr = b.Record(c, dep, now, t, o) })
	}, func() {})
	if err != nil {
		return breaker.Transition{}, fmt.Errorf("pgstore: record %s %s: %w", o, dep, noTable(err))
	}
	return tr, nil
}

// transition applies apply to dep's circuit atomically: first on a plain
// read, and if that changed the circuit, again on the locked row in a
// transaction that writes it back. unguarded runs instead when no rule
// guards dep. With a job, the read also says, in *remembered, whether the
// store deferred that job before.
func (s *Store) transition(ctx context.Context, dep, job string, remembered *bool, apply func(breaker.Breaker, *breaker.Circuit, time.Time) error, unguarded func()) error {
	if err := breaker.CheckName(dep); err != nil {
		return err
	}
	b, ok := s.rules.For(dep)
	if !ok {
		unguarded()
		return nil
	}
	var r row
	var err error
	if job != "" {
		// The clock the store answers on decides what it still remembers.
		var injected *int64
		if s.now != nil {
			t, err := s.clock(0)
			if err != nil {
				return err
			}
			ms := t.UnixMilli()
			injected = &ms
		}
		r, err = scan(s.pool.QueryRow(ctx, s.qRemembered, dep, job, injected), nil, remembered)
	} else {
		r, err = scan(s.pool.QueryRow(ctx, s.qRead, dep), nil, nil)
	}
	if err != nil {
		return err
	}
	now, err := s.clock(r.now)
	if err != nil {
		return err
	}
	c := r.c
	if err := apply(b, &c, now); err != nil {
		return err
	}
	if c.Equal(r.c) {
		return nil // nothing to write: the read was the whole transition
	}
	// A breaker's state is soft: losing the last few milliseconds of it
	// to a database crash costs a probe or a trip, not a job. So its
	// commits do not wait for the disk, which is most of their cost.
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL synchronous_commit TO OFF"}, func(tx pgx.Tx) error {
		r, err := scan(tx.QueryRow(ctx, s.qLock, dep), nil, nil)
		if err != nil {
			return err
		}
		now, err := s.clock(r.now)
		if err != nil {
			return err
		}
		c := r.c
		if err := apply(b, &c, now); err != nil {
			return err
		}
		ep, ws, wf := make([]int64, breaker.Buckets), make([]int64, breaker.Buckets), make([]int64, breaker.Buckets)
		for i, w := range c.Window {
			ep[i], ws[i], wf[i] = w.Epoch, w.Successes, w.Failures
		}
		_, err = tx.Exec(ctx, s.qWrite, dep, int16(c.State), c.Gen, c.Trips, c.Failures, c.Until,
			c.Probes, c.Successes, c.Lease, c.Budget.Units, c.Budget.At, ep, ws, wf, s.text(dep, b), leasesOrEmpty(c.Leases))
		return err
	})
}

// leasesOrEmpty is leases, or an empty array for none (the column is NOT
// NULL, and pgx sends a nil slice as NULL).
func leasesOrEmpty(leases []int64) []int64 {
	if leases == nil {
		return []int64{}
	}
	return leases
}

// statusOf is Status without the bound of the store's Timeout.
func (s *Store) statusOf(ctx context.Context, dep string) (breaker.Status, error) {
	if err := breaker.CheckName(dep); err != nil {
		return breaker.Status{}, err
	}
	r, err := scan(s.pool.QueryRow(ctx, s.qRead, dep), nil, nil)
	if err != nil {
		return breaker.Status{}, fmt.Errorf("pgstore: status %s: %w", dep, noTable(err))
	}
	return s.status(dep, r)
}

func (s *Store) status(dep string, r row) (breaker.Status, error) {
	now, err := s.clock(r.now)
	if err != nil {
		return breaker.Status{}, err
	}
	b, ok := s.rules.For(dep)
	if !ok && r.rule != "" {
		b, _ = breaker.Parse(r.rule)
	}
	st, err := safe.Value("pgstore: status", breaker.Status{}, func() breaker.Status { return b.Status(dep, r.c, now) })
	if err != nil {
		return breaker.Status{}, err
	}
	if st.Rule == "" {
		st.Rule = r.rule
	}
	return st, nil
}

// list is List without the bound of the store's Timeout.
func (s *Store) list(ctx context.Context) ([]breaker.Status, error) {
	rows, err := s.pool.Query(ctx, s.qList)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list: %w", noTable(err))
	}
	defer rows.Close()
	var out []breaker.Status
	for rows.Next() {
		var dep string
		r, err := scan(rows, &dep, nil)
		if err != nil {
			return nil, fmt.Errorf("pgstore: list: %w", err)
		}
		st, err := s.status(dep, r)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: list: %w", err)
	}
	return out, nil
}

// ErrNoTable is what the store's errors wrap when the table is missing.
var ErrNoTable = errors.New("pgstore: the breaker table is missing, want it created by pgstore.Migrate")

// noTable adds ErrNoTable to err when it says the table does not exist.
func noTable(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return errors.Join(ErrNoTable, err)
	}
	return err
}

// text returns the text form of dep's rule, computed once: a cool-down
// policy of the user's whose String panics gives "" rather than taking the
// process down.
func (s *Store) text(dep string, b breaker.Breaker) string {
	if v, ok := s.texts.Load(dep); ok {
		return v.(string)
	}
	t, _ := safe.Value("pgstore: rule text", "", b.String)
	s.texts.Store(dep, t)
	return t
}
