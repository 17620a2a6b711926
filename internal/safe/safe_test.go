package safe

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rebound-go/rebound/observe"
)

type ptrErr struct{ msg string }

func (e *ptrErr) Error() string { return e.msg } // panics on a nil receiver

type panicErr struct{}

func (panicErr) Error() string { panic("no text for you") }

func TestCallRecovers(t *testing.T) {
	if err := Call("policy", func() {}); err != nil {
		t.Fatalf("Call of a quiet func = %v, want nil", err)
	}
	err := Call("policy", func() { panic("boom") })
	var pe *observe.PanicError
	if !errors.As(err, &pe) || pe.Op != "policy" || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Fatalf("Call of a panicking func = %#v, want *observe.PanicError{Op: policy, Value: boom, Stack: ...}", err)
	}
}

func TestValueFallsBack(t *testing.T) {
	v, err := Value("key", 7, func() int { return 3 })
	if v != 3 || err != nil {
		t.Fatalf("Value = %d, %v; want 3, nil", v, err)
	}
	v, err = Value("key", 7, func() int { panic(errors.New("bad key")) })
	if v != 7 || err == nil || !strings.Contains(err.Error(), "key panicked: bad key") {
		t.Fatalf("Value of a panicking func = %d, %v; want the fallback 7 and a panic error", v, err)
	}
}

func TestMessageNeverPanics(t *testing.T) {
	var typedNil *ptrErr
	big := strings.Repeat("x", 1<<20)
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), "plain"},
		{typedNil, "(*safe.ptrErr)(nil)"},
		{panicErr{}, "safe.panicErr (its Error method panicked: no text for you)"},
		{&ptrErr{msg: big}, big},
	}
	for _, c := range cases {
		if got := Message(c.err); got != c.want {
			t.Errorf("Message(%T) = %.60q, want %.60q", c.err, got, c.want)
		}
	}
	if !IsNil(typedNil) || IsNil(errors.New("x")) || !IsNil(nil) {
		t.Error("IsNil disagrees with the typed-nil, non-nil and nil cases")
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("short", 100); got != "short" {
		t.Errorf("Truncate under the limit = %q, want it unchanged", got)
	}
	if got := Truncate("ok\xffthen\xc3", 100); got != "ok\uFFFDthen\uFFFD" {
		t.Errorf("Truncate of invalid UTF-8 = %q, want each bad sequence replaced", got)
	}
	if got := Truncate(strings.Repeat("\xff", 1<<20), 4096); !utf8.ValidString(got) || len(got) > 4096 {
		t.Errorf("Truncate of 1 MiB of invalid bytes: %d bytes, valid UTF-8 %v; want <= 4096 valid", len(got), utf8.ValidString(got))
	}
	if got := Truncate(strings.Repeat("a", 10), 0); len(got) != 10 {
		t.Errorf("Truncate with no limit changed the text: %q", got)
	}
	msg := strings.Repeat("é", 1<<19) // 1 MiB of two-byte runes
	for _, limit := range []int{64, 65, 4096, 4097} {
		got := Truncate(msg, limit)
		if len(got) > limit {
			t.Errorf("Truncate(1MiB, %d) is %d bytes, want at most %d", limit, len(got), limit)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Truncate(1MiB, %d) split a UTF-8 sequence: %q", limit, got[len(got)-40:])
		}
		if !strings.HasSuffix(got, "bytes truncated]") {
			t.Errorf("Truncate(1MiB, %d) = ...%q, want it to say how much was cut", limit, got[max(len(got)-30, 0):])
		}
	}
}
