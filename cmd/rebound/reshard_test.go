package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
)

// The reshard command's output on a miniredis: a dry run, a change from 1
// to 3 shards and its finish, a change from 3 to 2 whose dropped shard
// holds a delayed job (the finish refused, the status table), the finish
// once the job is gone, and bad input.
func TestReshardGolden(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	url := "redis://" + m.Addr()
	var b strings.Builder
	runAll := func(cmds ...[]string) {
		for _, args := range cmds {
			full := append([]string{"queue", "-redis", url}, args...)
			stdout, stderr, code := rebound(t, full...)
			fmt.Fprintf(&b, "$ rebound queue %s\n%s%sexit %d\n\n", strings.Join(args, " "), stdout, stderr, code)
		}
	}
	q, err := native.OpenQueue(ctx, rdb, "emails")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, nil, native.WithID("before")); err != nil {
		t.Fatal(err)
	}
	runAll(
		[]string{"reshard", "emails", "-status"},
		[]string{"reshard", "emails", "-shards", "3"},
		[]string{"reshard", "emails", "-shards", "3", "-yes"},
		[]string{"reshard", "emails", "-shards", "2", "-yes"},
		[]string{"reshard", "emails", "-finish"},
		[]string{"reshard", "emails", "-shards", "3"},
	)
	// A delayed job on the shard a change to 2 drops.
	three, err := native.OpenQueue(ctx, rdb, "emails")
	if err != nil {
		t.Fatal(err)
	}
	var late string
	for i := 0; late == ""; i++ {
		id := fmt.Sprint("late-", i)
		if _, err := three.Enqueue(ctx, nil, native.WithID(id), native.WithDelay(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if j, err := three.Job(ctx, id); err == nil && j.State == native.StateDelayed && shardOf(t, rdb, id) == 2 {
			late = id
		}
	}
	runAll(
		[]string{"reshard", "emails", "-shards", "2", "-yes"},
		[]string{"reshard", "emails", "-finish"},
		[]string{"-json", "reshard", "emails", "-status"},
		[]string{"reshard", "emails", "-shards", "4", "-yes"},
	)
	if _, err := three.Delete(ctx, late); err != nil {
		t.Fatal(err)
	}
	runAll(
		[]string{"reshard", "emails", "-finish"},
		[]string{"reshard", "emails", "-status"},
		// Bad input.
		[]string{"reshard", "emails"},
		[]string{"reshard", "emails", "-shards", "0"},
		[]string{"reshard", "emails", "-shards", "257"},
		[]string{"reshard", "emails", "-status", "-finish"},
		[]string{"reshard", "emails", "-finish", "-shards", "2"},
	)
	golden(t, "reshard.golden", strings.ReplaceAll(b.String(), m.Addr(), "MINIREDIS"))
}

// shardOf returns the index, in the layout of 3 shards, of the shard that
// holds job id of queue "emails".
func shardOf(t *testing.T, rdb redis.UniversalClient, id string) int {
	t.Helper()
	q, err := native.OpenQueue(context.Background(), rdb, "emails")
	if err != nil {
		t.Fatal(err)
	}
	for i, tag := range q.ShardTags() {
		if ok, _ := rdb.HExists(context.Background(), native.DefaultPrefix+":{"+tag+"}:jobs", id).Result(); ok {
			return i
		}
	}
	return -1
}
