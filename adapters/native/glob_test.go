package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
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
		patterns := []string{"*", "a*", "*b", "a*b", "?", "??", "*?*", `a\*b`, `\`, "**a**", "é", "?é"}
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
