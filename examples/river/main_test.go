package main

import (
	"bytes"
	"context"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/rebound-go/rebound/internal/testenv"
)

// checkRun runs the example with args and checks it printed the plan, two
// failed attempts and a third that succeeded, all under the rule's cap.
func checkRun(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, &out)
	}
	t.Log("\n" + out.String())
	want := regexp.MustCompile(`(?s)` +
		`plan: retry after attempt 1 waits .*plan: retry after attempt 2 waits .*` +
		`attempt 1/5 at \S+: smtp: 421.*` +
		`attempt 2/5 at \S+: smtp: 421.*` +
		`attempt 3/5 at \S+: sent to ada@example.com\n$`)
	if !want.MatchString(out.String()) {
		t.Errorf("output does not show the plan, two failures and a success:\n%s", &out)
	}
}

func TestExample(t *testing.T) { checkRun(t) }

func TestExamplePostgres(t *testing.T) {
	pool := testenv.Postgres(t)
	schema := testenv.Schema(t, pool)
	// The example migrates and runs in the connection's search_path: point
	// it at the test's own schema.
	u, err := url.Parse(testenv.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	checkRun(t, "-postgres", u.String())
}
