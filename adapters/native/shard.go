package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"

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

// layoutVersion is the version of the layout's format this code writes and
// reads.
const layoutVersion = 1

// layout is what the layout key holds, as JSON.
type layout struct {
	Version int      `json:"version"`
	Shards  []string `json:"shards"` // each shard's hash tag (escaped, without braces), shard 0 first
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

// shardFor returns the sub-queue that holds the job with ID id: q itself
// when q has one shard.
func (q *Queue) shardFor(id string) *Queue {
	if q.shards == nil {
		return q
	}
	return q.shards[shardIndex(id, len(q.shards))]
}

// Shards returns the number of the queue's shards: 1 for a queue from
// [NewQueue].
func (q *Queue) Shards() int {
	if q.shards == nil {
		return 1
	}
	return len(q.shards)
}

// parts returns the queue's shards, or q alone when it has one.
func (q *Queue) parts() []*Queue {
	if q.shards == nil {
		return []*Queue{q}
	}
	return q.shards
}

// ShardTags returns the hash tag of each of the queue's shards, shard 0
// first, as the layout key holds them: every key of shard i is
// "<prefix>:{<tag i>}:...".
func (q *Queue) ShardTags() []string {
	var tags []string
	for _, s := range q.parts() {
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
	stored, err := readLayout(ctx, rdb, lk)
	if err != nil {
		return nil, fmt.Errorf("native: NewShardedQueue %q: %w", name, err)
	}
	if stored == nil {
		if shards == 1 {
			return base, nil // nothing to write down: the queue is today's
		}
		// A queue of one shard in use holds jobs whose IDs hash to the
		// other shards: their actions by ID would miss them, and WithID
		// would not see them. Spreading it is not done here (see
		// docs/native.md, "Changing N").
		c, err := base.Counts(ctx)
		if err != nil {
			return nil, fmt.Errorf("native: NewShardedQueue %q: %w", name, err)
		}
		if held := c.Waiting + c.Active + c.Delayed + c.Completed + c.Failed; held > 0 {
			return nil, fmt.Errorf("native: NewShardedQueue %q: the queue already holds %d jobs as a queue of one shard, want an unused queue name to spread over %d shards: %s",
				name, held, shards, drainHint(shards))
		}
		tags, err := chooseTags(ctx, rdb, escapeTag(name), shards)
		if err != nil {
			return nil, fmt.Errorf("native: NewShardedQueue %q: choose the shards' hash tags: %w", name, err)
		}
		raw, _ := json.Marshal(layout{Version: layoutVersion, Shards: tags})
		ok, err := rdb.SetNX(ctx, lk, raw, 0).Result()
		if err != nil {
			return nil, fmt.Errorf("native: NewShardedQueue %q: write the layout: %w", name, err)
		}
		if !ok { // another process wrote one meanwhile: take it
			if stored, err = readLayout(ctx, rdb, lk); err != nil || stored == nil {
				return nil, fmt.Errorf("native: NewShardedQueue %q: read the layout another process wrote: %w", name, errors.Join(err, errors.New("layout gone")))
			}
		} else {
			stored = &layout{Version: layoutVersion, Shards: tags}
		}
	}
	if len(stored.Shards) != shards {
		return nil, fmt.Errorf("native: NewShardedQueue %q: the queue has %d shards (its layout at %q), not %d; open it with OpenQueue, or ask for %d, or %s",
			name, len(stored.Shards), lk, shards, len(stored.Shards), drainHint(shards))
	}
	return base.withLayout(stored)
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
	stored, err := readLayout(ctx, rdb, layoutKey(base.prefix, name))
	if err != nil {
		return nil, fmt.Errorf("native: OpenQueue %q: %w", name, err)
	}
	if stored == nil {
		return base, nil
	}
	return base.withLayout(stored)
}

// drainHint says how to give a queue in use a count of shards other than
// its own, the way that works while a live change of N is not built
// (docs/native.md, "Changing N").
func drainHint(shards int) string {
	return fmt.Sprintf("the count of a queue in use does not change in place; drain it instead (docs/native.md, \"Changing N\"): "+
		"create a queue under a new name with NewShardedQueue(ctx, rdb, name, %d), point the producers at it, and keep workers on this queue until its Counts are zero", shards)
}

// readLayout reads the layout at key: nil when there is none.
func readLayout(ctx context.Context, rdb redis.UniversalClient, key string) (*layout, error) {
	raw, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the layout at %q: %w", key, err)
	}
	var l layout
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return nil, fmt.Errorf("the layout at %q is not JSON (%v), want what NewShardedQueue writes", key, err)
	}
	if l.Version != layoutVersion {
		return nil, fmt.Errorf("the layout at %q has version %d, want %d (written by another version of rebound?)", key, l.Version, layoutVersion)
	}
	if len(l.Shards) < 1 || len(l.Shards) > MaxShards {
		return nil, fmt.Errorf("the layout at %q has %d shards, want 1..%d", key, len(l.Shards), MaxShards)
	}
	seen := map[string]bool{}
	for i, t := range l.Shards {
		if t == "" || seen[t] || (i == 0) != (t == tagOf(key)) {
			return nil, fmt.Errorf("the layout at %q has a bad tag %q for shard %d, want distinct tags, shard 0's the queue's own", key, t, i)
		}
		seen[t] = true
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

// withLayout returns q (of one shard, its own tag shard 0's) spread over
// the shards of l.
func (q *Queue) withLayout(l *layout) (*Queue, error) {
	if len(l.Shards) == 1 {
		return q, nil
	}
	shards := make([]*Queue, len(l.Shards))
	for i, tag := range l.Shards {
		shards[i] = &Queue{rdb: q.rdb, name: q.name, prefix: q.prefix, maxPayload: q.maxPayload,
			keepFor: q.keepFor, keepMost: q.keepMost, failFor: q.failFor, failMost: q.failMost,
			shard: i, tag: tag, keys: newTagKeys(q.prefix, tag)}
	}
	q.shards = shards
	return q, nil
}

// chooseTags returns n hash tags for the shards of the queue whose escaped
// name is tag: tag itself first, then "<tag>~<k>" for the smallest k that
// puts each next shard on a master holding the fewest shards so far (on a
// distinct master while the cluster has masters to spare), in a slot no
// other shard uses. The masters come from the cluster's slot map; on a
// client that is not a Cluster client, every slot is one master's.
func chooseTags(ctx context.Context, rdb redis.UniversalClient, tag string, n int) ([]string, error) {
	owner, masters, err := slotOwners(ctx, rdb)
	if err != nil {
		return nil, err
	}
	load := map[string]int{}
	for _, m := range masters {
		load[m] = 0
	}
	slots := map[uint16]bool{}
	first := keySlot(tag)
	tags := []string{tag}
	load[owner(first)]++
	slots[first] = true
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
