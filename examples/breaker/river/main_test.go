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

func TestExamplePostgres(t *testing.T) {
	pool := testenv.Postgres(t)
	schema := testenv.Schema(t, pool)
	exampletest.Match(t, exampletest.Run(t, run, "-postgres", testenv.PostgresURL(), "-schema", schema),
		outage.Story, outage.StoryTold)
}
