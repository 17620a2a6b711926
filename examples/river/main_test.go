package main

import (
	"net/url"
	"testing"

	"github.com/rebound-go/rebound/internal/exampletest"
	"github.com/rebound-go/rebound/internal/testenv"
)

// checkRun runs the example with args and checks it printed the plan, two
// failed attempts and a third that succeeded, all under the rule's cap.
func checkRun(t *testing.T, args ...string) {
	t.Helper()
	exampletest.Match(t, exampletest.Run(t, run, args...), exampletest.FlakyStory, "the plan, two failures and a success")
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
