package native

import (
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The scripts and the helpers they share. Each script is one file of lua/
// with one purpose; each helper is one file of lua/lib/, a local function
// that touches no key of its own (every key comes from the script's KEYS).
// A script names the helpers it uses in an include line of its leading
// comment,
//
//	-- include: num now_us wake
//
// in an order where each comes after the helpers it calls, and is loaded
// with exactly those in front of it: a script runs its whole text on every
// call, so every helper it carries is a closure Redis builds again each
// time.
//
//go:embed lua/*.lua lua/lib/*.lua
var luaFiles embed.FS

// includes returns the helper names of body's include line.
func includes(body string) []string {
	for line := range strings.Lines(body) {
		if !strings.HasPrefix(line, "--") {
			break // past the leading comment
		}
		if names, ok := strings.CutPrefix(line, "-- include:"); ok {
			return strings.Fields(names)
		}
	}
	return nil
}

// scriptSource is the text of the script NAME as sent to Redis: the
// helpers its include line names, in that order, then its body.
func scriptSource(name string) string {
	body := mustRead("lua/" + name + ".lua")
	var b strings.Builder
	for _, h := range includes(body) {
		b.WriteString(mustRead("lua/lib/" + h + ".lua"))
		b.WriteString("\n")
	}
	b.WriteString(body)
	return b.String()
}

// mustRead reads an embedded file; a missing one is a bug in this package.
func mustRead(path string) string {
	b, err := luaFiles.ReadFile(path)
	if err != nil {
		panic("native: embedded " + path + " missing: " + err.Error())
	}
	return string(b)
}

// script loads the script NAME, run by SHA (EVALSHA, falling back to EVAL
// once per server).
func script(name string) *redis.Script {
	return redis.NewScript(scriptSource(name))
}

// The scripts, one purpose each. Every key they touch is passed in KEYS.
var (
	scriptEnqueue        = script("enqueue")
	scriptEnqueueDelayed = script("enqueue_delayed")
	scriptEnqueueMany    = script("enqueue_many")
	scriptReserve        = script("reserve")
	scriptComplete       = script("complete")
	scriptFail           = script("fail")
	scriptPromote        = script("promote")
	scriptReclaim        = script("reclaim")
	scriptExtend         = script("extend")
	scriptRelease        = script("release")
	scriptDefer          = script("defer")
	scriptGiveUpClaim    = script("give_up_claim")
	scriptGiveUpDone     = script("give_up_done")

	// Operator actions (list.go, actions.go, pause.go).
	scriptListSorted  = script("list_sorted")
	scriptListWaiting = script("list_waiting")
	scriptRetry       = script("retry")
	scriptRetryFailed = script("retry_failed")
	scriptDelete      = script("delete")
	scriptRunNow      = script("run_now")
	scriptCancel      = script("cancel")
	scriptCancelAck   = script("cancel_ack")
	scriptPause       = script("pause")
	scriptResume      = script("resume")

	// Redrives (redrive.go).
	scriptRedriveStart  = script("redrive_start")
	scriptRedriveStep   = script("redrive_step")
	scriptRedriveRenew  = script("redrive_renew")
	scriptRedriveSet    = script("redrive_set")
	scriptRedriveResume = script("redrive_resume")

	// Changes of a sharded queue's N (reshard.go).
	scriptLayoutSwap    = script("layout_swap")
	scriptLayoutFence   = script("layout_fence")
	scriptDropCompleted = script("drop_completed")
)
