package native

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Each script includes every helper it calls, directly or through another
// helper, each after the helpers it calls, and no other: an unused helper
// is a closure built on every call. (The test finds calls by scanning the
// Lua text; the scripts themselves are assembled from their include lines
// only.)
func TestScriptsIncludeExactlyTheHelpersTheyUse(t *testing.T) {
	files, err := fs.Glob(luaFiles, "lua/lib/*.lua")
	if err != nil || len(files) < 10 {
		t.Fatalf("lua/lib holds %d helpers (%v), want one file per helper", len(files), err)
	}
	helpers := map[string]string{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".lua")
		src := mustRead(f)
		if got := regexp.MustCompile(`(?m)^local function ([a-z_]+)\(`).FindAllStringSubmatch(src, -1); len(got) != 1 || got[0][1] != name {
			t.Errorf("%s defines %v, want exactly the function %s", f, got, name)
		}
		helpers[name] = src
	}
	comment := regexp.MustCompile(`--[^\n]*`)
	calls := func(src string) []string {
		code := comment.ReplaceAllString(src, "")
		var out []string
		for name := range helpers {
			if regexp.MustCompile(`\b` + name + `\(`).MatchString(strings.ReplaceAll(code, "local function "+name+"(", "")) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	scripts, _ := fs.Glob(luaFiles, "lua/*.lua")
	for _, f := range scripts {
		name := strings.TrimSuffix(path.Base(f), ".lua")
		body := mustRead(f)
		inc := includes(body)
		// Every helper called by the body or by an included helper is
		// included, before its callers.
		for i, h := range inc {
			src, ok := helpers[h]
			if !ok {
				t.Errorf("%s includes %q, which lua/lib does not hold", name, h)
				continue
			}
			for _, c := range calls(src) {
				if j := slices.Index(inc, c); j < 0 || j > i {
					t.Errorf("%s: helper %s calls %s, which is not included before it (include: %v)", name, h, c, inc)
				}
			}
		}
		need := map[string]bool{}
		for _, c := range calls(body) {
			need[c] = true
			if !slices.Contains(inc, c) {
				t.Errorf("%s calls %s but does not include it (include: %v)", name, c, inc)
			}
		}
		for i := len(inc) - 1; i >= 0; i-- {
			if !need[inc[i]] {
				t.Errorf("%s includes %s, which neither it nor an included helper calls", name, inc[i])
				continue
			}
			for _, c := range calls(helpers[inc[i]]) {
				need[c] = true
			}
		}
		if src := scriptSource(name); !strings.HasSuffix(src, body) || strings.Count(src, "local function ") != len(inc)+strings.Count(body, "local function ") {
			t.Errorf("%s is not assembled as its included helpers, then its body", name)
		}
	}
}
