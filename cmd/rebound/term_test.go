package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
)

// hostileText holds what a terminal acts on: a screen clear and a cursor
// move, a window title (OSC ... BEL), a C1 CSI, a carriage return that
// overwrites the line, DEL, a backspace, a bidi override and a byte that
// is not UTF-8.
const hostileText = "boom\x1b[2J\x1b[H fake prompt$ \x1b]0;owned\x07 \u009b31m red\r over\x7f\x08 \u202eevil\u202c \xff end"

// terminalSafe fails t if out holds a byte or character a terminal would
// act on: any control but the newline, DEL, a C1 control, a format
// character or a byte that is not UTF-8.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not UTF-8: %q", what, out)
	}
	for _, r := range out {
		if r != '\n' && !termPrintable(r) {
			t.Errorf("%s: output holds %U, which a terminal acts on:\n%q", what, r, out)
			return
		}
	}
}

// rebound queue ls and show escape job text a terminal would act on: an
// error, a name or an ID that clears the screen, sets the title or
// reorders text prints as escapes; -json was already safe.
func TestQueuePrintsJobTextEscaped(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	q := queueAt(t, rdb, native.DefaultPrefix)
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Hour)), 2))
	w, err := native.NewWorker(q, rule, func(context.Context, *native.Job) error {
		return backoff.Permanent(errors.New(hostileText + "\nsecond line " + hostileText))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	id := "id-" + hostileText
	if _, err := q.Enqueue(ctx, nil, native.WithID(id), native.WithName("name-"+hostileText)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if j, err := q.Job(ctx, id); err == nil && j.State == native.StateFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never failed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	url := "redis://" + m.Addr()
	ls := queueCLI(t, url, exitOK, "ls", "emails")
	terminalSafe(t, "ls", ls)
	show := queueCLI(t, url, exitOK, "show", "emails", id)
	terminalSafe(t, "show", show)
	for _, want := range []string{`\x1b[2J`, `\x1b]0;owned\x07`, `\u009b31m`, `\x0d over\x7f\x08`, `\u202eevil\u202c`, `\xff end`} {
		if !strings.Contains(show, want) {
			t.Errorf("show does not print %s as an escape:\n%s", want, show)
		}
	}
	if !strings.Contains(show, "\nsecond line boom") {
		t.Errorf("show's full error lost its newline:\n%s", show)
	}
	terminalSafe(t, "rm", queueCLI(t, url, exitOK, "rm", "emails", id))
}

func TestTermText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode ✓": "plain text, ünïcode ✓",
		"a\tb\nc":               `a\x09b\x0ac`,
		"\x00\x1b\x7f":          `\x00\x1b\x7f`,
		"\u0085\u009f":          `\u0085\u009f`,
		"\u200f\u2066\u2028":    `\u200f\u2066\u2028`,
		"\xc3\x28":              `\xc3(`,
		"\U000e0001":            `\U000e0001`,
	} {
		if got := termText(in, false); got != want {
			t.Errorf("termText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := termText("a\nb\r", true); got != "a\nb\\x0d" {
		t.Errorf("termText keeping newlines = %q", got)
	}
}
