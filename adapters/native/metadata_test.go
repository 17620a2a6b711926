package native

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Metadata is stored byte for byte, keys included, also when it is not
// valid UTF-8: from Enqueue to the handler, from one attempt to the next,
// and to the inspector.
func TestMetadataIsStoredFaithfully(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "meta")
		in := map[string]string{"k\xff": "v\xfe", "ok": "plain", "": "", "quote\"{": "1:2,3|"}
		var mu sync.Mutex
		var seen []map[string]string
		startWorker(t, q, fixedRule(t, time.Millisecond, 3), func(ctx context.Context, j *Job) error {
			mu.Lock()
			seen = append(seen, maps.Clone(map[string]string(j.Metadata)))
			mu.Unlock()
			if j.Attempt == 1 {
				j.Metadata.Set("set\xfd", "\xfc by the handler")
				return errors.New("again")
			}
			return nil
		})
		if _, err := q.Enqueue(ctx, nil, WithID("m"), WithMetadata(in)); err != nil {
			t.Fatal(err)
		}
		info := waitState(t, q, "m", StateCompleted, 5*time.Second)
		want := maps.Clone(in)
		want["set\xfd"] = "\xfc by the handler"
		if !maps.Equal(info.Metadata, want) {
			t.Errorf("stored metadata %q, want %q", info.Metadata, want)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 2 || !maps.Equal(seen[0], in) || !maps.Equal(seen[1], want) {
			t.Errorf("handler saw %q, want %q then %q", seen, in, want)
		}
	})
}

func TestMetadataPacking(t *testing.T) {
	for _, m := range []map[string]string{{}, {"a": "b"}, {"": ""}, {"k\xff": "v\x00:", "12:": "3:x"}} {
		s := encodeMeta(m)
		if got := decodeMeta(s); !maps.Equal(got, m) {
			t.Errorf("decodeMeta(encodeMeta(%q)) = %q via %q", m, got, s)
		}
		if s != encodeMeta(maps.Clone(m)) {
			t.Errorf("encodeMeta(%q) is not deterministic", m)
		}
	}
	// Records written before metadata was packed hold JSON.
	if got := decodeMeta(`{"traceparent":"00-ab","k":"v"}`); !maps.Equal(got, map[string]string{"traceparent": "00-ab", "k": "v"}) {
		t.Errorf("JSON metadata decoded to %q", got)
	}
	// A malformed pair ends the map; it never panics.
	if got := decodeMeta("1:a1:b9:c"); !maps.Equal(got, map[string]string{"a": "b"}) {
		t.Errorf("malformed metadata decoded to %q, want the pairs before the bad one", got)
	}
	if got := decodeMeta(""); got == nil || len(got) != 0 {
		t.Errorf("empty metadata decoded to %#v, want an empty, non-nil map", got)
	}
}
