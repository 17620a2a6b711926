// Package exampletest runs rebound's runnable examples from their tests, so
// none of them rots.
package exampletest

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"testing"
	"time"
)

// Run calls an example's run function with args, under a one-minute
// deadline, fails t if it returns an error, and returns what it printed.
func Run(t *testing.T, run func(ctx context.Context, args []string, out io.Writer) error, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("run %q: %v\n%s", args, err, &out)
	}
	t.Log("\n" + out.String())
	return out.String()
}

// Match fails t unless out matches the pattern, compiled with (?s) so that
// "." spans lines; what names the story the pattern expects.
func Match(t *testing.T, out, pattern, what string) {
	t.Helper()
	if !regexp.MustCompile(`(?s)` + pattern).MatchString(out) {
		t.Errorf("output does not show %s:\n%s", what, out)
	}
}

// FlakyStory is the pattern of the examples' story told as "attempt N/MAX":
// the plan for two retries, two failed attempts and a third that succeeds.
const FlakyStory = `plan: retry after attempt 1 waits .*plan: retry after attempt 2 waits .*` +
	`attempt 1/5 at \S+: smtp: 421.*` +
	`attempt 2/5 at \S+: smtp: 421.*` +
	`attempt 3/5 at \S+: sent to ada@example.com\n$`
