package main

import (
	"testing"

	"github.com/rebound-go/rebound/examples/breaker/internal/outage"
	"github.com/rebound-go/rebound/internal/exampletest"
	"github.com/rebound-go/rebound/internal/testenv"
)

func TestExample(t *testing.T) {
	exampletest.Match(t, exampletest.Run(t, run), outage.Story, outage.StoryTold)
}

func TestExampleRealRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	queue := "rbt-breaker-" + testenv.Name(t, 20)
	t.Cleanup(func() { testenv.DeleteKeys(rdb, "asynq:{"+queue+"}*") })
	exampletest.Match(t, exampletest.Run(t, run, "-redis", "redis://"+testenv.RedisAddr(), "-queue", queue, "-prefix", testenv.Prefix(t, rdb)),
		outage.Story, outage.StoryTold)
}
