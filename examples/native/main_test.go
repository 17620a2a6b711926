package main

import (
	"testing"

	"github.com/rebound-go/rebound/adapters/native"
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

func TestExampleRealRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	queue := "rbt-example-" + testenv.Name(t, 20)
	t.Cleanup(func() { testenv.DeleteKeys(rdb, native.DefaultPrefix+":{"+queue+"}*") })
	checkRun(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", queue)
}
