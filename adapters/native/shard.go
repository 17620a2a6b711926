package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Sharded queues (see docs/native.md, "Sharded queues"): one logical queue
// stored as N sub-queues, its shards, each a queue of today's layout under
// a hash tag of its own. Shard 0's tag is the queue's own, so a queue of one
// shard is the queue NewQueue opens, key for key; shard i > 0 has the tag
// "<queue>~<k>" for the k its creation chose so that the shards land on
// distinct Cluster masters. The tags are written down in the layout key,
// "<prefix>:{<queue>}:layout", in shard 0's slot, and read by every
// process that opens the queue, so all agree whatever the slot map does
// later. A job lives on one shard, the one its ID hashes to (shardIndex).

// MaxShards is the most shards a queue may have.
const MaxShards = 256

// layoutVersion is the version of the layout's format this code writes;
// it reads version 1 too (written before a live change of N was built: a
// layout of epoch 1 with no change draining).
const layoutVersion = 2

// layout is what the layout key holds, as JSON.
type layout struct {
	Version int `json:"version"`
	// Epoch numbers the layout: 1 for the first one written, one more for
	// each change of N (a queue that has no layout is at epoch 0). Every
	// shard keeps the newest epoch its producers held (keys.epoch), and
	// refuses a producer holding an older one (lua/lib/fence.lua).
	Epoch  int64    `json:"epoch,omitempty"`
	Shards []string `json:"shards"` // each shard's hash tag (escaped, without braces), shard 0 first
	// Prev is the previous layout's tags while a change of N drains
	// (Reshard until FinishReshard): its shards are served too, and a job
	// of it sits on the shard its ID hashed to among len(Prev).
	Prev []string `json:"prev,omitempty"`
}

// layoutKey is the key that holds the layout of queue under prefix.
func layoutKey(prefix, queue string) string {
	return newKeys(prefix, queue).base + "layout"
}

// shardIndex is the shard of n that holds the job with ID id: the 32-bit
// FNV-1a hash of the ID modulo n. It depends on the ID alone, so a job
// enqueued twice with one WithID goes to one shard, which refuses the
// second.
func shardIndex(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// A layoutHandle is what every copy of one opened queue shares: where its
// layout is stored and the view of it now held, which a reload replaces.
type layoutHandle struct {
	key  string
	base *Queue // the queue as NewQueue opens it, whose options every shard takes
	view atomic.Pointer[shardView]
	mu   sync.Mutex // one reload at a time
}

// A shardView is one layout as the queue uses it: immutable once built.
type shardView struct {
	raw   string // the layout as stored, "" for none
	epoch int64
	cur   []*Queue // the layout's shards: a new job goes to cur[shardIndex(id, len(cur))]
	prev  []*Queue // the previous layout's while a change drains, else nil
	all   []*Queue // cur, then prev's shards cur does not keep: what workers serve and reads cover
}

// view returns the layout q now holds: nil for a queue from NewQueue and
// for a shard.
func (q *Queue) view() *shardView {
	if q.lay == nil {
		return nil
	}
	return q.lay.view.Load()
}

// fan returns q's view when q spans more than one shard: the methods that
// read or act on the whole queue run on each of v.all then. A queue of one
// shard (from NewQueue, or opened by a layout of one shard with no change
// draining) runs them on its own keys, which are its shard's.
func (q *Queue) fan() (*shardView, bool) {
	v := q.view()
	return v, v != nil && len(v.all) > 1
}

// shardFor returns the shard a new job with ID id goes to: q itself when
// q is from NewQueue or is a shard.
func (q *Queue) shardFor(id string) *Queue {
	v := q.view()
	if v == nil {
		return q
	}
	return v.cur[shardIndex(id, len(v.cur))]
}

// Shards returns the number of the queue's shards, as its layout says: 1
// for a queue from [NewQueue]. While a change of N drains, it is the new
// count.
func (q *Queue) Shards() int {
	if v := q.view(); v != nil {
		return len(v.cur)
	}
	return 1
}

// parts returns every shard the queue spans: q alone when it is from
// NewQueue.
func (q *Queue) parts() []*Queue {
	if v := q.view(); v != nil {
		return v.all
	}
	return []*Queue{q}
}

// ShardTags returns the hash tag of each of the queue's shards, shard 0
// first, as the layout key holds them: every key of shard i is
// "<prefix>:{<tag i>}:...". While a change of N drains, they are the new
// layout's.
func (q *Queue) ShardTags() []string {
	var tags []string
	for _, s := range q.parts()[:q.Shards()] {
		tags = append(tags, s.tag)
	}
	return tags
}

// NewShardedQueue returns the queue called name on rdb, spread over shards
// sub-queues that it places on distinct Cluster masters (as far as the
// cluster has masters): one logical queue, with the API of a queue of one
// shard. When the queue has no layout yet, it chooses the shards' hash tags
// from the cluster's slot map and writes them down in Redis; when it has
// one (created by an earlier call, in any process), it uses that one, so
// every process agrees on where each job lives. A queue created with 1
// shard, or never created here at all, is the queue [NewQueue] opens, key
// for key.
//
// shards must be 1 to [MaxShards], and match the layout already stored, if
// any: changing the number of shards of a live queue is not done by this
// call (see docs/native.md), nor is spreading a queue of one shard that
// holds jobs: a queue without a layout must be empty (no job in any state)
// to become one of more shards. On a single Redis node (not a Cluster) the
// shards all live on that node: it works, and gains nothing.
func NewShardedQueue(ctx context.Context, rdb redis.UniversalClient, name string, shards int, opts ...QueueOption) (*Queue, error) {
	if ctx == nil {
		return nil, fmt.Errorf("native: NewShardedQueue %q: ctx is nil, want a context.Context (context.Background() for none)", name)
	}
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("native: NewShardedQueue %q: %d shards is out of range, want 1..%d", name, shards, MaxShards)
	}
	base, err := NewQueue(rdb, name, opts...)
	if err != nil {
		return nil, err
	}
	lk := layoutKey(base.prefix, name)
	raw, stored, err := readLayout(ctx, rdb, lk)
	if err != nil {
		return nil, fmt.Errorf("native: NewShardedQueue %q: %w", name, err)
	}
	if stored == nil {
		if shards == 1 {
			return base.withLayout("", nil), nil // nothing to write down: the queue is today's
		}
		// A queue of one shard in use holds jobs whose IDs hash to the
		// other shards: spreading it is a change of N (Reshard), which
		// serves them where they are while they drain.
		c, err := base.Counts(ctx)
		if err != nil {
			return nil, fmt.Errorf("native: NewShardedQueue %q: %w", name, err)
		}
		if held := c.Waiting + c.Active + c.Delayed + c.Completed + c.Failed; held > 0 {
			return nil, fmt.Errorf("native: NewShardedQueue %q: the queue already holds %d jobs as a queue of one shard, want an unused queue name to create with %d shards: %s",
				name, held, shards, reshardHint(name, shards))
		}
		tags, err := chooseTags(ctx, rdb, []string{escapeTag(name)}, shards)
		if err != nil {
			return nil, fmt.Errorf("native: NewShardedQueue %q: choose the shards' hash tags: %w", name, err)
		}
		mine, _ := json.Marshal(layout{Version: layoutVersion, Epoch: 1, Shards: tags})
		ok, err := rdb.SetNX(ctx, lk, mine, 0).Result()
		if err != nil {
			return nil, fmt.Errorf("native: NewShardedQueue %q: write the layout: %w", name, err)
		}
		if !ok { // another process wrote one meanwhile: take it
			if raw, stored, err = readLayout(ctx, rdb, lk); err != nil || stored == nil {
				return nil, fmt.Errorf("native: NewShardedQueue %q: read the layout another process wrote: %w", name, errors.Join(err, errors.New("layout gone")))
			}
		} else {
			raw, stored = string(mine), &layout{Version: layoutVersion, Epoch: 1, Shards: tags}
		}
	}
	if len(stored.Shards) != shards {
		return nil, fmt.Errorf("native: NewShardedQueue %q: the queue has %d shards (its layout at %q), not %d; open it with OpenQueue, or ask for %d, or %s",
			name, len(stored.Shards), lk, shards, len(stored.Shards), reshardHint(name, shards))
	}
	return base.withLayout(raw, stored), nil
}

// OpenQueue returns the queue called name on rdb as its stored layout
// says: sharded when it was created by [NewShardedQueue] with more than
// one shard, else the queue [NewQueue] returns. Tools that serve any queue
// (the rebound command) open queues this way.
func OpenQueue(ctx context.Context, rdb redis.UniversalClient, name string, opts ...QueueOption) (*Queue, error) {
	if ctx == nil {
		return nil, fmt.Errorf("native: OpenQueue %q: ctx is nil, want a context.Context (context.Background() for none)", name)
	}
	base, err := NewQueue(rdb, name, opts...)
	if err != nil {
		return nil, err
	}
	raw, stored, err := readLayout(ctx, rdb, layoutKey(base.prefix, name))
	if err != nil {
		return nil, fmt.Errorf("native: OpenQueue %q: %w", name, err)
	}
	return base.withLayout(raw, stored), nil
}

// reshardHint says how to give a queue in use a count of shards other than
// its own.
func reshardHint(name string, shards int) string {
	return fmt.Sprintf("the count of a queue in use changes with Reshard(ctx, rdb, %q, %d) or `rebound queue reshard -queue %s -shards %d` (docs/native.md, \"Changing N\")", name, shards, name, shards)
}

// readLayout reads the layout at key, and the text it is stored as: nil
// and "" when there is none.
func readLayout(ctx context.Context, rdb redis.UniversalClient, key string) (string, *layout, error) {
	raw, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("read the layout at %q: %w", key, err)
	}
	l, err := parseLayout(key, raw)
	return raw, l, err
}

// parseLayout checks the layout stored at key as raw.
func parseLayout(key, raw string) (*layout, error) {
	var l layout
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return nil, fmt.Errorf("the layout at %q is not JSON (%v), want what NewShardedQueue writes", key, err)
	}
	switch l.Version {
	case 1:
		if l.Epoch != 0 || l.Prev != nil {
			return nil, fmt.Errorf("the layout at %q is of version 1 with an epoch or a previous layout, which version 1 does not have", key)
		}
		l.Epoch = 1
	case layoutVersion:
		if l.Epoch < 1 {
			return nil, fmt.Errorf("the layout at %q has epoch %d, want 1 or more", key, l.Epoch)
		}
	default:
		return nil, fmt.Errorf("the layout at %q has version %d, want 1 or %d (written by another version of rebound?)", key, l.Version, layoutVersion)
	}
	for _, tags := range [][]string{l.Shards, l.Prev} {
		if tags == nil && len(l.Shards) > 0 {
			continue // no previous layout
		}
		if len(tags) < 1 || len(tags) > MaxShards {
			return nil, fmt.Errorf("the layout at %q has %d shards, want 1..%d", key, len(tags), MaxShards)
		}
		seen := map[string]bool{}
		for i, t := range tags {
			if t == "" || seen[t] || (i == 0) != (t == tagOf(key)) {
				return nil, fmt.Errorf("the layout at %q has a bad tag %q for shard %d, want distinct tags, shard 0's the queue's own", key, t, i)
			}
			seen[t] = true
		}
	}
	return &l, nil
}

// tagOf returns the hash tag of key, which has one.
func tagOf(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					return key[i+1 : j]
				}
			}
		}
	}
	return ""
}

// withLayout returns q (from NewQueue) opened by the layout stored as raw
// (l, nil with raw "" when there is none): a queue holding a handle to its
// layout, which it reloads when a shard refuses its view as stale.
func (q *Queue) withLayout(raw string, l *layout) *Queue {
	h := &layoutHandle{key: layoutKey(q.prefix, q.name), base: q}
	h.view.Store(h.build(raw, l))
	q.lay = h
	return q
}

// build returns the view of the layout l stored as raw (nil: none, the
// queue's own tag alone at epoch 0).
func (h *layoutHandle) build(raw string, l *layout) *shardView {
	if l == nil {
		l = &layout{Shards: []string{h.base.tag}}
	}
	v := &shardView{raw: raw, epoch: l.Epoch}
	byTag := map[string]*Queue{}
	shard := func(tag string) *Queue {
		if s, ok := byTag[tag]; ok {
			return s
		}
		b := h.base
		s := &Queue{rdb: b.rdb, name: b.name, prefix: b.prefix, maxPayload: b.maxPayload,
			keepFor: b.keepFor, keepMost: b.keepMost, failFor: b.failFor, failMost: b.failMost,
			shard: len(v.all), tag: tag, keys: newTagKeys(b.prefix, tag), epoch: l.Epoch, fenced: true}
		byTag[tag] = s
		v.all = append(v.all, s)
		return s
	}
	for _, t := range l.Shards {
		v.cur = append(v.cur, shard(t))
	}
	for _, t := range l.Prev {
		v.prev = append(v.prev, shard(t))
	}
	return v
}

// reload reads the layout again and, when it changed, makes it the view
// the queue holds. Concurrent callers share one read.
func (q *Queue) reload(ctx context.Context) (*shardView, error) {
	h := q.lay
	old := h.view.Load()
	h.mu.Lock()
	defer h.mu.Unlock()
	if v := h.view.Load(); v != old {
		return v, nil // another caller reloaded meanwhile
	}
	raw, l, err := readLayout(ctx, q.rdb, h.key)
	if err != nil {
		return old, fmt.Errorf("native: queue %q: reload its layout: %w", q.name, err)
	}
	if raw == old.raw {
		return old, nil
	}
	v := h.build(raw, l)
	h.view.Store(v)
	return v, nil
}

// chooseTags returns n hash tags for the shards of the queue whose first
// tags are have (have[0] its escaped name; more when a change of N grows
// a sharded queue, whose shards keep their tags): have, then "<tag>~<k>"
// for the smallest k that
// puts each next shard on a master holding the fewest shards so far (on a
// distinct master while the cluster has masters to spare), in a slot no
// other shard uses. The masters come from the cluster's slot map; on a
// client that is not a Cluster client, every slot is one master's.
func chooseTags(ctx context.Context, rdb redis.UniversalClient, have []string, n int) ([]string, error) {
	owner, masters, err := slotOwners(ctx, rdb)
	if err != nil {
		return nil, err
	}
	load := map[string]int{}
	for _, m := range masters {
		load[m] = 0
	}
	slots := map[uint16]bool{}
	tag := have[0]
	tags := append([]string(nil), have...)
	for _, t := range tags {
		load[owner(keySlot(t))]++
		slots[keySlot(t)] = true
	}
	for len(tags) < n {
		best, bestLoad, bestSlot := "", -1, uint16(0)
		for k := 1; k <= 4096; k++ {
			cand := tag + "~" + strconv.Itoa(k)
			s := keySlot(cand)
			if slots[s] || contains(tags, cand) {
				continue
			}
			l := load[owner(s)]
			if bestLoad < 0 || l < bestLoad {
				best, bestLoad, bestSlot = cand, l, s
			}
			if l == 0 || l <= minLoad(load) {
				break
			}
		}
		if best == "" {
			return nil, fmt.Errorf("no free slot found for shard %d", len(tags))
		}
		tags = append(tags, best)
		load[owner(bestSlot)]++
		slots[bestSlot] = true
	}
	return tags, nil
}

// minLoad is the fewest shards any master holds.
func minLoad(load map[string]int) int {
	m := -1
	for _, l := range load {
		if m < 0 || l < m {
			m = l
		}
	}
	return m
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// slotOwners returns a function naming the master that serves each slot,
// from the cluster's slot map (CLUSTER SHARDS, or CLUSTER SLOTS before
// Redis 7), and the masters; one master, "", serves
// every slot on a client that is not a Cluster client.
func slotOwners(ctx context.Context, rdb redis.UniversalClient) (func(uint16) string, []string, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return func(uint16) string { return "" }, []string{""}, nil
	}
	owners := make([]string, 16384)
	var masters []string
	own := func(addr string, lo, hi int64) {
		if !contains(masters, addr) {
			masters = append(masters, addr)
		}
		for s := max(lo, 0); s <= hi && s < int64(len(owners)); s++ {
			owners[s] = addr
		}
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err == nil {
		for _, sh := range shards {
			for _, n := range sh.Nodes {
				if n.Role != "master" {
					continue
				}
				for _, r := range sh.Slots {
					own(net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)), r.Start, r.End)
				}
			}
		}
		return func(s uint16) string { return owners[s] }, masters, nil
	}
	// Before Redis 7 (no CLUSTER SHARDS): the slot map of CLUSTER SLOTS.
	//lint:ignore SA1019 the fallback for servers without CLUSTER SHARDS
	ranges, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("read the cluster's slot map (CLUSTER SHARDS, then CLUSTER SLOTS): %w", err)
	}
	for _, r := range ranges {
		if len(r.Nodes) > 0 {
			own(r.Nodes[0].Addr, int64(r.Start), int64(r.End))
		}
	}
	return func(s uint16) string { return owners[s] }, masters, nil
}

// keySlot is the Cluster slot of a key whose hash tag is tag (or of the key
// tag itself): CRC16 (XMODEM) of it, modulo 16384, as Redis Cluster's
// specification defines.
func keySlot(tag string) uint16 {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}
