package main

import (
	"context"
	"testing"

	"github.com/rebound-go/rebound/internal/exampletest"
	"github.com/rebound-go/rebound/internal/testenv"
)

// checkRun runs the example with args and checks it printed two failed
// attempts, each followed by rebound's retry decision, and a third that
// succeeded.
func checkRun(t *testing.T, args ...string) {
	t.Helper()
	out := exampletest.Run(t, run, args...)
	exampletest.Match(t, out,
		`plan: retry after attempt 1 waits .*plan: retry after attempt 2 waits .*`+
			`attempt 1 at \S+: smtp: 421.*rebound: retry in .*`+
			`attempt 2 at \S+: smtp: 421.*rebound: retry in .*`+
			`attempt 3 at \S+: sent to ada@example.com\n$`,
		"the plan, two retried failures and a success")
}

func TestExample(t *testing.T) { checkRun(t) }

func TestExampleRealRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	queue := "rbt-example-" + testenv.Name(t, 20)
	t.Cleanup(func() {
		testenv.DeleteKeys(rdb, "asynq:{"+queue+"}*")
		rdb.SRem(context.Background(), "asynq:queues", queue)
	})
	checkRun(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", queue)
}
