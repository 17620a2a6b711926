package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
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

func TestExampleRealRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	queue := "rbt-example-" + testenv.Name(t, 20)
	t.Cleanup(func() { testenv.DeleteKeys(rdb, native.DefaultPrefix+":{"+queue+"}*") })
	checkRun(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", queue)
}
