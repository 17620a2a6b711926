package reboundasynq

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeaderRetryAt is the task header under which precise mode stores the exact
// time the next attempt is due, as decimal Unix nanoseconds (written by
// RetryDelay; more digits than an int64 holds for times past 2262).
const HeaderRetryAt = "rebound-retry-at"

// maxPreciseWait bounds how long precise mode holds an early attempt. asynq
// delivers a task at most one second early (it truncates to whole seconds);
// a longer wait means clocks disagree or the header is bogus, and the
// attempt runs rather than holding a worker indefinitely.
const maxPreciseWait = time.Second

// headerCarrier is the observe.Carrier an attempt's observer gets. It
// reads the task's headers as they were when the attempt began, plus what
// was set since; what is set stays here until RetryDelay, on asynq's own
// goroutine, copies it into the task's headers just before asynq stores
// the task for its next attempt. The observer never writes the map asynq
// owns: asynq reads and encodes that map on its own goroutine as soon as a
// task's context ends, while the handler may still be running.
type headerCarrier struct {
	mu   sync.Mutex
	base map[string]string
	set  map[string]string
}

func newHeaderCarrier(headers map[string]string) *headerCarrier {
	return &headerCarrier{base: maps.Clone(headers)}
}

// Get returns the value stored under key, or "".
func (c *headerCarrier) Get(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.set[key]; ok {
		return v
	}
	return c.base[key]
}

// Set stores value under key, for the task's next attempt.
func (c *headerCarrier) Set(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		c.set = make(map[string]string)
	}
	c.set[key] = value
}

// Keys lists the keys stored.
func (c *headerCarrier) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.base)+len(c.set))
	for k := range c.base {
		keys = append(keys, k)
	}
	for k := range c.set {
		if _, ok := c.base[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// writes returns what was set since the attempt began.
func (c *headerCarrier) writes() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.set)
}

// waitUntil blocks until the time stored in v (HeaderRetryAt), at most
// maxPreciseWait. It does not end early when the task's context does: an
// attempt never starts before its time, and a cancel or deadline that
// comes during the wait reaches the handler, at that time, as a context
// already done. asynq counts that run as failed, and the next retry is
// decided from then.
func waitUntil(v string) {
	if v == "" {
		return
	}
	at, ok := parseRetryAt(v)
	if !ok {
		return
	}
	if wait := time.Until(at); wait > 0 {
		time.Sleep(min(wait, maxPreciseWait))
	}
}

// formatRetryAt writes t as decimal Unix nanoseconds, for HeaderRetryAt.
// Times past 2262, beyond an int64 of nanoseconds, get more digits.
func formatRetryAt(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10) + fmt.Sprintf("%09d", t.Nanosecond())
}

// parseRetryAt reads a HeaderRetryAt value: decimal digits only.
func parseRetryAt(v string) (time.Time, bool) {
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return time.Time{}, false
	}
	if len(v) <= 9 {
		ns, err := strconv.ParseInt(v, 10, 64)
		return time.Unix(0, ns), err == nil
	}
	sec, err := strconv.ParseInt(v[:len(v)-9], 10, 64)
	ns, _ := strconv.ParseInt(v[len(v)-9:], 10, 64) // nine digits always parse
	return time.Unix(sec, ns), err == nil
}
