package ui

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// shrinkTimeouts sets the server's timeouts for one test.
func shrinkTimeouts(t *testing.T, header, read, write, idle time.Duration) {
	t.Helper()
	old := [4]time.Duration{readHeaderTimeout, readTimeout, writeTimeout, idleTimeout}
	readHeaderTimeout, readTimeout, writeTimeout, idleTimeout = header, read, write, idle
	t.Cleanup(func() { readHeaderTimeout, readTimeout, writeTimeout, idleTimeout = old[0], old[1], old[2], old[3] })
}

// closedWithin reports whether the server closes c within d: a read
// returns EOF (or a reset) rather than timing out.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	return true
}

// A connection that sits idle after its request, one that never finishes
// its header and one that never sends its body are closed, on loopback
// and, without the token, beyond it: none pins a file descriptor for
// good. The event stream outlives every one of those timeouts.
func TestServerClosesIdleAndSlowConnections(t *testing.T) {
	shrinkTimeouts(t, 300*time.Millisecond, 600*time.Millisecond, 600*time.Millisecond, 300*time.Millisecond)
	for _, remote := range []bool{false, true} {
		cfg := Config{Queues: []Queue{newFakeQueue("emails")}, Refresh: MinRefresh}
		if remote {
			cfg.Remote, cfg.Token = true, "0123456789abcdef-secret"
		}
		base, _ := serve(t, newServer(t, cfg))
		addr := strings.TrimPrefix(base, "http://")
		dial := func() net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}

		// Idle after a whole request and its answer (a 401 without the
		// token).
		c := dial()
		if _, err := io.WriteString(c, "GET /favicon.svg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		if !closedWithin(t, c, 5*time.Second) {
			t.Errorf("remote %v: an idle keep-alive connection (after a %d) is still open after 5s", remote, res.StatusCode)
		}

		// A header that never ends.
		c = dial()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		if !closedWithin(t, c, 5*time.Second) {
			t.Errorf("remote %v: a connection whose header never ends is still open after 5s", remote)
		}

		// A body that never comes.
		c = dial()
		if _, err := io.WriteString(c, "POST /api/action HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		if !closedWithin(t, c, 5*time.Second) {
			t.Errorf("remote %v: a connection whose body never comes is still open after 5s", remote)
		}

		// The event stream goes on past every timeout.
		req, _ := http.NewRequest(http.MethodGet, base+"/api/queues/events", nil)
		if remote {
			req.Header.Set("Authorization", "Bearer "+cfg.Token)
		}
		res, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(res.Body)
		start, events := time.Now(), 0
		for time.Since(start) < 2*time.Second && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events++
			}
		}
		res.Body.Close()
		if d := time.Since(start); d < 2*time.Second || events < 4 {
			t.Errorf("remote %v: the event stream ended after %s and %d events (%v), want it open past the 600ms timeouts", remote, d.Round(time.Millisecond), events, sc.Err())
		}
	}
}

// Over TLS the timeouts hold too: a connection that never finishes its
// handshake, and one idle after a request, are closed; the event stream
// goes on past them; and Serve's TLS answers with the Secure cookie.
func TestServeTLSKeepsTimeouts(t *testing.T) {
	shrinkTimeouts(t, 300*time.Millisecond, 600*time.Millisecond, 600*time.Millisecond, 300*time.Millisecond)
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	cert, pool := ts.TLS.Certificates[0], x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	ts.Close()
	token := "0123456789abcdef-secret"
	s := newServer(t, Config{Queues: []Queue{newFakeQueue("emails")}, Refresh: MinRefresh, Remote: true, Token: token,
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	base, _ := serve(t, s)
	addr := strings.TrimPrefix(base, "http://")

	// A handshake that never comes.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !closedWithin(t, c, 5*time.Second) {
		t.Error("a connection that never starts its TLS handshake is still open after 5s")
	}

	// The httptest certificate names example.com; the client asks for it.
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := client.Get("https://" + addr + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if cs := res.Cookies(); len(cs) != 1 || !cs[0].Secure || res.TLS == nil || res.ProtoMajor != 1 {
		t.Errorf("answer %s over TLS %v, cookies %+v; want HTTP/1.1 and one Secure cookie", res.Proto, res.TLS != nil, cs)
	}

	// Idle after a request.
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, err := io.WriteString(tc, "GET /favicon.svg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err = http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	if !closedWithin(t, tc, 5*time.Second) {
		t.Errorf("an idle TLS keep-alive connection (after a %d) is still open after 5s", res.StatusCode)
	}

	// The event stream goes on past every timeout.
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/api/queues/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	start, events := time.Now(), 0
	for time.Since(start) < 2*time.Second && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			events++
		}
	}
	res.Body.Close()
	if d := time.Since(start); d < 2*time.Second || events < 4 {
		t.Errorf("the event stream over TLS ended after %s and %d events (%v), want it open past the 600ms timeouts", d.Round(time.Millisecond), events, sc.Err())
	}
}
