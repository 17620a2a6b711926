package reboundriver

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/riverqueue/river"
)

// metadataCarrier is an observe.Carrier over a River job's metadata. Get
// reads the metadata the attempt started with and anything Set since; Set
// records the value with river.MetadataSet, which River merges into the job
// row when the attempt ends, whether it succeeded or failed, so the next
// attempt reads it back.
type metadataCarrier struct {
	ctx context.Context // a work context, which MetadataSet needs
	raw []byte

	mu     sync.Mutex
	parsed map[string]string
	set    map[string]string
	// sealed is set when the worker has returned: River reads the
	// attempt's metadata updates then, so later values are kept here only,
	// and River's map is never written from another goroutine.
	sealed bool
}

func newMetadataCarrier(ctx context.Context, raw []byte) *metadataCarrier {
	return &metadataCarrier{ctx: ctx, raw: raw}
}

// load parses the job's metadata once. String values are kept as they are,
// other JSON values as their JSON text. Malformed metadata reads as empty.
func (c *metadataCarrier) load() {
	if c.parsed != nil {
		return
	}
	c.parsed = make(map[string]string)
	var m map[string]json.RawMessage
	if len(c.raw) == 0 || json.Unmarshal(c.raw, &m) != nil {
		return
	}
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil {
			c.parsed[k] = s
		} else {
			c.parsed[k] = string(v)
		}
	}
}

// Get returns the value stored under key, or "".
func (c *metadataCarrier) Get(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.set[key]; ok {
		return v
	}
	c.load()
	return c.parsed[key]
}

// Set stores value under key for the job's next attempt. Keys River reserves
// (prefixed "river:") and calls outside a work context are ignored: a carrier
// has no way to report an error. A value Set after the worker returned is
// read back by Get but not stored with the job.
func (c *metadataCarrier) Set(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.sealed && river.MetadataSet(c.ctx, key, value) != nil {
		return
	}
	if c.set == nil {
		c.set = make(map[string]string)
	}
	c.set[key] = value
}

// seal stops Set from writing River's metadata: the worker has returned.
func (c *metadataCarrier) seal() {
	c.mu.Lock()
	c.sealed = true
	c.mu.Unlock()
}

// Keys lists the keys of the job's metadata and of the values Set since.
func (c *metadataCarrier) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.load()
	keys := make([]string, 0, len(c.parsed)+len(c.set))
	for k := range c.parsed {
		keys = append(keys, k)
	}
	for k := range c.set {
		if _, dup := c.parsed[k]; !dup {
			keys = append(keys, k)
		}
	}
	return keys
}
