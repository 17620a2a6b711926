package native

import (
	"fmt"
	"strconv"
	"strings"
)

// record is one job as the jobs hash stores it: a single packed string per
// job, so a waiting job costs one hash entry instead of a key, a hash of
// its own and entries in per-queue side hashes. The layout (shared with
// lua/lib.lua) is
//
//	<attempts>,<tok>,<max>,<created>,<finished>,<ftok>|<n>:<err><n>:<meta><n>:<name><payload>
//
// with the three strings prefixed by their byte length and the payload
// taking the rest, so no byte of any field needs escaping.
type record struct {
	attempts int    // attempts started
	tok      string // token of the reservation holding the lease, "" when none
	max      int    // the job's own cap, 0: the worker's rule
	created  int64  // server ms
	finished int64  // server ms, 0 until the job completed or failed for good
	ftok     string // token of the reservation that last finished an attempt; "0"+token once an operator cancelled it
	name     string
	meta     string // packed by encodeMeta, "" for none
	err      string // last error text
	payload  []byte
}

// decodeRecord parses a stored record.
func decodeRecord(s string) (record, error) {
	var r record
	bad := func(what string) (record, error) {
		return record{}, fmt.Errorf("native: job record is malformed (%s), want <attempts>,<tok>,<max>,<created>,<finished>,<ftok>|<n>:<err><n>:<meta><n>:<name><payload>", what)
	}
	head, rest, ok := strings.Cut(s, "|")
	if !ok {
		return bad("no '|'")
	}
	var f [6]string
	for i := range f {
		var ok bool
		if f[i], head, ok = strings.Cut(head, ","); ok != (i < len(f)-1) {
			return bad("header has " + strconv.Itoa(strings.Count(s[:strings.IndexByte(s, '|')], ",")+1) + " fields, want 6")
		}
	}
	r.attempts = int(parseInt(f[0]))
	r.tok = f[1]
	r.max = int(parseInt(f[2]))
	r.created = parseInt(f[3])
	r.finished = parseInt(f[4])
	r.ftok = f[5]
	for _, dst := range []*string{&r.err, &r.meta, &r.name} {
		if *dst, rest, ok = cutCounted(rest); !ok {
			return bad("bad string length")
		}
	}
	r.payload = []byte(rest)
	return r, nil
}

// cancelled reports a record an operator's cancel ended: its ftok is "0",
// or "0" and the token of the reservation that was running it (see
// lua/cancel.lua). Tokens count from 1, so no reservation's starts with 0.
func (r record) cancelled() bool { return strings.HasPrefix(r.ftok, "0") }
