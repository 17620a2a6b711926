package native

import (
	"embed"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// libFunc is one helper of lua/lib.lua: its name and its source (the
// comment above it included).
type libFunc struct {
	name string
	src  string
}

var libFuncHead = regexp.MustCompile(`(?m)^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)

// libFuncs splits lua/lib.lua into its helpers, in file order. Each helper
// runs from the end of the previous one (its own leading comment) to the
// start of the next one's comment.
func libFuncs(lib string) []libFunc {
	heads := libFuncHead.FindAllStringSubmatchIndex(lib, -1)
	funcs := make([]libFunc, len(heads))
	start := 0
	for i, h := range heads {
		end := len(lib)
		if i+1 < len(heads) {
			// The next helper's comment belongs to it: cut at the blank
			// line before it.
			next := heads[i+1][0]
			if cut := strings.LastIndex(lib[:next], "\n\n"); cut > h[0] {
				end = cut + 1
			} else {
				end = next
			}
		}
		funcs[i] = libFunc{name: lib[h[2]:h[3]], src: lib[start:end]}
		start = end
	}
	return funcs
}

// usesName reports whether Lua source src calls the helper name.
func usesName(src, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\(`).MatchString(src)
}

// withHelpers puts in front of body only the helpers of lib it needs
// (directly or through another helper), in lib's order. A script runs its
// whole text on every call, so every helper it carries is a closure Redis
// builds again each time: carrying only the ones used keeps each call cheap.
func withHelpers(lib, body string) string {
	funcs := libFuncs(lib)
	need := make([]bool, len(funcs))
	// Helpers only call helpers defined before them, so one pass from the
	// last to the first finds every one needed.
	for i := len(funcs) - 1; i >= 0; i-- {
		if usesName(body, funcs[i].name) {
			need[i] = true
			continue
		}
		for j := i + 1; j < len(funcs); j++ {
			if need[j] && usesName(funcs[j].src, funcs[i].name) {
				need[i] = true
				break
			}
		}
	}
	var b strings.Builder
	for i, f := range funcs {
		if need[i] {
			b.WriteString(f.src)
		}
	}
	b.WriteString("\n")
	b.WriteString(body)
	return b.String()
}

// script loads lua/NAME.lua with the shared helpers it uses in front of
// it. The result is run by SHA (EVALSHA, falling back to EVAL once per
// server).
func script(name string) *redis.Script {
	return redis.NewScript(scriptSource(name))
}

// scriptSource is the text of the script NAME as sent to Redis.
func scriptSource(name string) string {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic("native: embedded lua/lib.lua missing: " + err.Error())
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("native: embedded lua/" + name + ".lua missing: " + err.Error())
	}
	return withHelpers(string(lib), string(body))
}

// The scripts, one purpose each. Every key they touch is passed in KEYS.
var (
	scriptEnqueue  = script("enqueue")
	scriptReserve  = script("reserve")
	scriptComplete = script("complete")
	scriptFail     = script("fail")
	scriptPromote  = script("promote")
	scriptReclaim  = script("reclaim")
	scriptExtend   = script("extend")
	scriptRelease  = script("release")
)
