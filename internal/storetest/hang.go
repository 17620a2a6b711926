package storetest

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/breaker"
)

// Hanging starts a server on a free loopback port that accepts
// connections and reads what they send but never answers: a store's
// server that hangs. It stops when t ends. It returns the address.
func Hanging(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// Bounded checks that every call of s, a store on a server that hangs
// built with a Timeout of timeout, returns a timeout error within limit,
// however long its client would wait (the caller sets that far above
// limit).
func Bounded(t *testing.T, s breaker.Store, timeout, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	calls := map[string]func() error{
		"Allow": func() error {
			_, err := s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Fresh, ID: "j1"})
			return err
		},
		"Record": func() error {
			_, err := s.Record(ctx, "payments", breaker.Ticket{}, breaker.Failure)
			return err
		},
		"Status": func() error { _, err := s.Status(ctx, "payments"); return err },
		"List":   func() error { _, err := s.List(ctx); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		took := time.Since(start)
		if err == nil {
			t.Errorf("%s on a server that hangs returned no error", name)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on a server that hangs: %v, want a timeout", name, err)
		}
		if took < timeout || took > limit {
			t.Errorf("%s on a server that hangs took %v, want between its timeout %v and %v", name, took, timeout, limit)
		}
		t.Logf("%s: %v after %v", name, err, took)
	}
}
