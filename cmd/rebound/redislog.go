package main

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// go-redis logs to stderr on its own when its pool cannot dial (four lines
// of "connection pool: failed to dial after 5 attempts" before the command
// gets its error back), which buried rebound's one message about the same
// failure. Every error the commands get from go-redis is reported in their
// own words, so its log lines are dropped.
func init() { redis.SetLogger(droppedLog{}) }

// droppedLog is go-redis's logger in this command: it drops every line.
type droppedLog struct{}

// Printf drops a go-redis log line.
func (droppedLog) Printf(context.Context, string, ...any) {}
