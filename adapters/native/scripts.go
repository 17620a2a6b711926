package native

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script loads lua/NAME.lua with the shared helpers in front of it. The
// result is run by SHA (EVALSHA, falling back to EVAL once per server).
func script(name string) *redis.Script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic("native: embedded lua/lib.lua missing: " + err.Error())
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("native: embedded lua/" + name + ".lua missing: " + err.Error())
	}
	return redis.NewScript(string(lib) + "\n" + string(body))
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
)
