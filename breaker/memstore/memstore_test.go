package memstore_test

import (
	"testing"
	"time"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
	"github.com/rebound-go/rebound/internal/storetest"
)

// TestStore runs the store tests on shared in-memory state: every client
// of a backend is a view of one Store, built with that client's rules and
// clock.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		var shared *memstore.Store
		return func(rules breaker.Rules, now func() time.Time) breaker.Store {
			if shared == nil {
				shared = memstore.New(rules, memstore.Options{Now: now})
			}
			return shared
		}
	})
}
