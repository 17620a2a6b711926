package native

import (
	"strings"
	"testing"
)

// Each script carries the helpers it calls, directly or through another
// helper, and no other: an unused helper is a closure built on every call.
func TestScriptsCarryOnlyTheHelpersTheyUse(t *testing.T) {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	funcs := libFuncs(string(lib))
	if len(funcs) < 10 {
		t.Fatalf("lib.lua split into %d helpers, want every local function of it", len(funcs))
	}
	for _, f := range funcs {
		if strings.Count(f.src, "local function ") != 1 {
			t.Errorf("helper %s: source holds %d functions, want 1:\n%s", f.name, strings.Count(f.src, "local function "), f.src)
		}
	}
	cases := []struct {
		src       string
		name      string
		has, lack []string
	}{
		{scriptSource("reserve"), "reserve", []string{"num", "now_us", "promote_due", "next_due", "wake"}, []string{"rec_head", "schedule"}},
		{scriptSource("fail"), "fail", []string{"claim", "rec_head", "rec_ended", "schedule_all", "delayed_score", "wake", "fire_ms", "trim_finished"}, []string{"rec_encode", "promote_due", "next_due", "schedule"}},
		{scriptSource("complete"), "complete", []string{"claim", "rec_head", "rec_ended", "batch_read", "trim_finished"}, []string{"rec_encode", "schedule_all", "wake"}},
		{scriptSource("extend"), "extend", []string{"num", "now_us"}, []string{"rec_head", "wake"}},
	}
	for _, c := range cases {
		for _, h := range c.has {
			if !strings.Contains(c.src, "local function "+h+"(") {
				t.Errorf("%s lacks helper %s", c.name, h)
			}
		}
		for _, h := range c.lack {
			if strings.Contains(c.src, "local function "+h+"(") {
				t.Errorf("%s carries unused helper %s", c.name, h)
			}
		}
	}
}
