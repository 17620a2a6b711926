package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/internal/testenv"
)

// refGlob is the glob FailedFilter documents, matched by brute force: '*'
// any run of bytes, '?' one byte, '\' the next byte literally (a trailing
// '\' is itself).
func refGlob(p, s string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if refGlob(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && refGlob(p[1:], s[1:])
	case '\\':
		if len(p) > 1 {
			return s != "" && s[0] == p[1] && refGlob(p[2:], s[1:])
		}
	}
	return s != "" && s[0] == p[0] && refGlob(p[1:], s[1:])
}

// The scripts' glob (lua/lib/glob.lua, which matches segment by segment
// without backtracking) picks exactly the names the brute-force reference
// does, for random patterns and names over an alphabet of wildcards, Lua
// pattern characters and a two-byte rune.
func TestRetryFailedGlobMatchesReference(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "glob")
		r := rand.New(rand.NewPCG(1, 2))
		// Few letters, so that patterns match often; every character a
		// Lua pattern gives a meaning.
		word := func(alphabet string, max int) string {
			b := []byte{}
			for range r.IntN(max + 1) {
				b = append(b, alphabet[r.IntN(len(alphabet))])
			}
			return string(b)
		}
		names := map[string]string{} // ID -> name
		for i := range 30 {
			id := fmt.Sprintf("g%d", i)
			name := word("aabb.%[^$-*?\\é", 6)
			if i < 4 {
				name = []string{"", "a", "ab", "a*b"}[i]
			}
			names[id] = name
			if _, err := q.Enqueue(ctx, nil, WithID(id), WithName(name)); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		// Long names and parts of 32 bytes with '?': every bit of
		// shift-and's word, and KMP's fallbacks.
		for i, name := range []string{strings.Repeat("ab", 20), "x" + strings.Repeat("a", 33) + "-", strings.Repeat("a", 31) + "b" + strings.Repeat("a", 40), "aabaabaaab" + strings.Repeat("aab", 10) + "c"} {
			id := fmt.Sprintf("long%d", i)
			names[id] = name
			if _, err := q.Enqueue(ctx, nil, WithID(id), WithName(name)); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		patterns := []string{"*", "a*", "*b", "a*b", "?", "??", "*?*", `a\*b`, `\`, "**a**", "é", "?é",
			"*" + strings.Repeat("?", 32) + "*", "*" + strings.Repeat("?", 33) + "*", "*a" + strings.Repeat("?", 30) + "-*",
			"*" + strings.Repeat("a?", 16) + "*", "*" + strings.Repeat("?a", 16) + "*", "*" + strings.Repeat("a", 31) + "b*", "*" + strings.Repeat("a", 31) + "?a*",
			"*?" + strings.Repeat("a", 31) + "*", "*aab" + strings.Repeat("aab", 9) + "c*", "*aabaab?aab*", "*" + strings.Repeat("ab", 19) + "?*"}
		for range 400 {
			patterns = append(patterns, word("abab**?\\.%[é", 7))
		}
		for _, p := range patterns {
			if p == "" {
				continue // an empty filter matches everything
			}
			var want []string
			for id, name := range names {
				if refGlob(p, name) {
					want = append(want, id)
				}
			}
			n, err := q.RetryFailed(ctx, FailedFilter{Name: p}, RetryOptions{})
			if checkGlob(p) != nil {
				if err == nil {
					t.Errorf("pattern %q: RetryFailed took it, want an error", p)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			got := listAll(t, q, StateWaiting, 100, true)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) || n != len(want) {
				var gotNames, wantNames []string
				for _, id := range got {
					gotNames = append(gotNames, names[id])
				}
				for _, id := range want {
					wantNames = append(wantNames, names[id])
				}
				t.Errorf("pattern %q matched %q (said %d), want %q", p, gotNames, n, wantNames)
			}
			for _, id := range got {
				if _, err := q.Cancel(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// The glob with the KMP threshold shrunk so that every literal part is
// searched by KMP: the same names as the reference.
func TestRetryFailedGlobKMPMatchesReference(t *testing.T) {
	old := retryKMPFrom
	retryKMPFrom = 1
	t.Cleanup(func() { retryKMPFrom = old })
	TestRetryFailedGlobMatchesReference(t)
}

// hostileGlobs are patterns built to be slow on long texts of one byte:
// a long literal run before a byte that never comes (the naive search
// compares the run at every place), runs of '?', many stars.
func hostileGlobs() map[string]string {
	return map[string]string{
		"4000 a then -":    "*" + strings.Repeat("a", 4000) + "-*",
		"19 a then -":      "*" + strings.Repeat("a", 19) + "-*",
		"32 ?":             "*" + strings.Repeat("?", 31) + "-*",
		"a? x16 then -":    "*" + strings.Repeat("a?", 15) + "-*",
		"500 stars":        strings.Repeat("*a", 500) + "-*",
		"anchored 4000 a":  strings.Repeat("a", 4000) + "-*",
		"16 KiB of a then": "*" + strings.Repeat("a", MaxGlobBytes-3) + "-*",
	}
}

// No pattern holds Redis: over 200 failed jobs with 8 KiB errors of one
// byte, each hostile pattern takes about what a plain one does (the
// glob reads each text once), and no step of it keeps Redis from
// answering a PING for long. Before, '*<4000 a>-*' held Redis 15-26 s.
func TestRetryFailedHostileGlobsStayCheap(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "hostile-glob")
	seed := failJob(t, q, "seed", strings.Repeat("a", MaxErrorBytes-8))
	rec, err := rdb.HGet(ctx, q.keys.jobs, seed).Result()
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	pipe := rdb.Pipeline()
	for i := range n {
		id := fmt.Sprintf("h%03d", i)
		pipe.HSet(ctx, q.keys.jobs, id, rec)
		pipe.ZAdd(ctx, q.keys.failed, redis.Z{Score: float64(i + 1), Member: id})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// measure runs RetryFailed with pattern p (which matches no job) and
	// returns how long it took and the longest a PING sent meanwhile
	// waited.
	ping := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr()})
	defer ping.Close()
	measure := func(p string) (total, worstPing time.Duration) {
		t.Helper()
		stop := make(chan struct{})
		done := make(chan time.Duration)
		go func() {
			var worst time.Duration
			for {
				select {
				case <-stop:
					done <- worst
					return
				default:
				}
				start := time.Now()
				_ = ping.Ping(ctx).Err()
				worst = max(worst, time.Since(start))
				time.Sleep(time.Millisecond)
			}
		}()
		start := time.Now()
		moved, err := q.RetryFailed(ctx, FailedFilter{Error: p}, RetryOptions{})
		total = time.Since(start)
		close(stop)
		worstPing = <-done
		if err != nil || moved != 0 {
			t.Fatalf("RetryFailed(%.40q) = %d, %v; want 0 jobs moved", p, moved, err)
		}
		return total, worstPing
	}
	// The baseline reads every byte of every error in a Lua loop, as the
	// hostile patterns do when they are matched in linear time: a 'z'
	// never comes, and each 'a' starts a partial match.
	plain := "*a" + strings.Repeat("z", 30) + "*"
	base, basePing := measure(plain)
	t.Logf("plain %q: %s for %d jobs, worst PING %s", plain, base.Round(time.Microsecond), n, basePing.Round(time.Microsecond))
	for name, p := range hostileGlobs() {
		total, worst := measure(p)
		t.Logf("%s: %s, worst PING %s", name, total.Round(time.Microsecond), worst.Round(time.Microsecond))
		// The bounds follow what this machine did for the plain pattern,
		// with room for a loaded machine: before, '*<4000 a>-*' took 1000
		// times as long.
		if limit := 10*base + time.Second; total > limit {
			t.Errorf("%s: RetryFailed took %s over %d jobs, the plain pattern %s: want at most %s", name, total, n, base, limit)
		}
		if limit := 10*max(basePing, 5*time.Millisecond) + 250*time.Millisecond; worst > limit {
			t.Errorf("%s: a PING waited %s meanwhile (%s for the plain pattern): want at most %s", name, worst, basePing, limit)
		}
	}
}

func TestCheckGlob(t *testing.T) {
	for _, ok := range []string{"", "*", "a?b", strings.Repeat("?", MaxGlobWildPart), "*" + strings.Repeat("?", MaxGlobWildPart) + "*" + strings.Repeat("a", 1000), `\?` + strings.Repeat("a", 100)} {
		if err := checkGlob(ok); err != nil {
			t.Errorf("checkGlob(%.30q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"a\x00", strings.Repeat("a", MaxGlobBytes+1), "*" + strings.Repeat("?", MaxGlobWildPart+1) + "*", "x?" + strings.Repeat("a", MaxGlobWildPart)} {
		if err := checkGlob(bad); err == nil {
			t.Errorf("checkGlob(%.30q) = nil, want an error", bad)
		}
	}
}
