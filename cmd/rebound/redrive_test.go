package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
)

// The redrive command's output, on a miniredis whose clock the test sets:
// a dry run, a redrive of one group driven to its end, its status and
// its record on a job (hostile text escaped), a redrive another process
// holds (refused, paused, resumed, cancelled), and bad input. Redrive IDs
// and the host's time of each job's redrive are masked.
func TestRedriveGolden(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q := queueAt(t, rdb, native.DefaultPrefix)
	failGroups(t, q)
	m.SetTime(time.Date(2026, 3, 1, 12, 1, 30, 0, time.UTC))
	url := "redis://" + m.Addr()
	var b strings.Builder
	runAll := func(cmds ...[]string) {
		for _, args := range cmds {
			full := append([]string{"queue", "-redis", url}, args...)
			stdout, stderr, code := rebound(t, full...)
			fmt.Fprintf(&b, "$ rebound queue %s\n%s%sexit %d\n\n", strings.Join(args, " "), stdout, stderr, code)
		}
	}
	runAll(
		[]string{"redrive", "emails", "-rate", "2"},
		[]string{"redrive", "emails", "-group", native.GroupID("dial tcp <addr>: i/o timeout"), "-rate", "1000", "-yes"},
		[]string{"redrive", "emails", "-status"},
		[]string{"show", "emails", "job-0"},
		[]string{"redrive", "emails", "-pause"},
		[]string{"redrive", "emails", "-error", "pwned", "-rate", "1000", "-yes"},
		[]string{"show", "emails", "job-7"},
	)
	// A redrive another process holds, its lease live (the server's clock
	// stands still).
	if _, err := q.StartRedrive(context.Background(), native.RedriveOptions{Rate: 5, Filter: native.Filter{Name: "sync"}}); err != nil {
		t.Fatal(err)
	}
	runAll(
		[]string{"redrive", "emails", "-rate", "10", "-yes"},
		[]string{"redrive", "emails", "-status"},
		[]string{"redrive", "emails", "-pause"},
		[]string{"-json", "redrive", "emails", "-status"},
		[]string{"redrive", "emails", "-resume"},
		[]string{"redrive", "emails", "-cancel"},
		[]string{"redrive", "emails", "-status"},
		[]string{"redrive", "emails", "-cancel"},
		// Bad input.
		[]string{"redrive", "emails"},
		[]string{"redrive", "emails", "-rate", "0"},
		[]string{"redrive", "emails", "-rate", "20000"},
		[]string{"redrive", "emails", "-status", "-pause"},
		[]string{"redrive", "emails", "-status", "-rate", "5"},
		[]string{"redrive", "emails", "-pause", "-dependency", "x"},
		[]string{"redrive", "emails", "-rate", "5", "-from", "2026-03-01T12:00:00Z", "-to", "2026-03-01T11:00:00Z"},
	)
	out := strings.ReplaceAll(b.String(), m.Addr(), "MINIREDIS")
	out = regexp.MustCompile(`\b[0-9a-f]{24}\b`).ReplaceAllString(out, "<redrive-id>")
	out = regexp.MustCompile(`(rebound-redriven-at=)\S+`).ReplaceAllString(out, "${1}<time>")
	golden(t, "redrive.golden", out)
}
