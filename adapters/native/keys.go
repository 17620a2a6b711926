package native

import (
	"fmt"
	"strings"
)

// keys names every Redis key of one queue. All of them share the hash tag
// {queue}, so a queue lives in one Cluster slot and each script can touch
// all of its keys.
type keys struct {
	base        string // "<prefix>:{<queue>}:"
	wait        string // LIST of job IDs enqueued to run at once, run front to back
	due         string // LIST of job IDs promoted from delayed, run before wait
	active      string // ZSET id -> lease deadline (ms, server clock)
	delayed     string // ZSET id -> fire_ms*0x1000 + its place in that ms (lua/lib/delayed_score.lua)
	failed      string // ZSET id -> finish time (ms)
	completed   string // ZSET id -> finish time (ms), trimmed by retention
	jobs        string // HASH id -> the job's packed record (record.go)
	marker      string // ZSET wake-up marker idle workers block on
	counter     string // STRING counter: lease tokens
	control     string // HASH an operator's flags: paused (ms since), cancels (count of running jobs cancelled)
	giveup      string // ZSET id -> lease deadline (ms) of the worker that owes the job's give-up call
	giveupCalls string // HASH id -> what the owed give-up call tells (lua/lib/give_up_call.lua)
	cancelling  string // HASH id -> "<token>,<lease deadline ms>" of a running job cancelled that its worker has not yet confirmed stopping (lua/cancel.lua)
	cancels     string // Pub/Sub channel: the token of each running job an operator cancels, so its worker learns at once
	redrive     string // HASH the queue's redrive: its filter, rate, cursor, counts, state and lease (redrive.go)
	epoch       string // STRING the newest layout epoch a producer of this shard has held (lua/lib/fence.lua); kept for good

	// The KEYS of the complete, fail, release, defer and reserve scripts,
	// built once: every outcome and every fetch sends one of them.
	completeKeys, failKeys, releaseKeys, deferKeys, reserveKeys []string
}

func newKeys(prefix, queue string) keys {
	return newTagKeys(prefix, escapeTag(queue))
}

// newTagKeys names the keys of the queue (or shard) whose hash tag is tag,
// escaped already (see escapeTag).
func newTagKeys(prefix, tag string) keys {
	base := prefix + ":{" + tag + "}:"
	k := keys{
		base:        base,
		wait:        base + "wait",
		due:         base + "due",
		active:      base + "active",
		delayed:     base + "delayed",
		failed:      base + "failed",
		completed:   base + "completed",
		jobs:        base + "jobs",
		marker:      base + "marker",
		counter:     base + "counter",
		control:     base + "control",
		giveup:      base + "giveup",
		giveupCalls: base + "giveup:calls",
		cancelling:  base + "cancelling",
		cancels:     base + "cancels",
		redrive:     base + "redrive",
		epoch:       base + "epoch",
	}
	k.completeKeys = []string{k.jobs, k.active, k.completed}
	k.failKeys = []string{k.jobs, k.active, k.delayed, k.failed, k.marker, k.giveup, k.giveupCalls}
	k.releaseKeys = []string{k.jobs, k.active, k.due, k.marker}
	k.deferKeys = []string{k.jobs, k.active, k.delayed, k.marker}
	k.reserveKeys = []string{k.wait, k.active, k.delayed, k.marker, k.jobs, k.counter, k.due, k.control}
	return k
}

// escapeTag makes a queue name safe inside a hash tag: Redis Cluster takes
// the tag up to the first '}', so '{', '}' and the escape character '%'
// are percent-encoded. Distinct names stay distinct; names without those
// characters are kept as they are.
func escapeTag(s string) string {
	if !strings.ContainsAny(s, "{}%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '{', '}', '%':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func validateNames(prefix, queue string) error {
	if queue == "" {
		return fmt.Errorf("native: queue name is empty, want a name such as %q", "emails")
	}
	if prefix == "" {
		return fmt.Errorf("native: WithPrefix: the prefix is empty, want a prefix such as %q", DefaultPrefix)
	}
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("native: WithPrefix: %q contains '{' or '}', which would move the queue's Cluster hash tag; want a prefix without braces", prefix)
	}
	return nil
}
