package ui

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"math"
	"mime"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

//go:embed assets
var assets embed.FS

// Config configures a [Server].
type Config struct {
	// Model computes the curve view's numbers. It is required.
	Model Model
	// Queues are the queues the queue view shows, in order; none hides the
	// view. Their names must be distinct.
	Queues []Queue
	// Remote serves requests whose Host is not a loopback address: set it
	// when listening beyond loopback. Every request then needs Token.
	Remote bool
	// Token is the access token a remote server requires; it must be at
	// least 16 characters (runes, not bytes), and may hold any of them:
	// the browser's cookie carries a digest of it, never the token's own
	// bytes. It is ignored on loopback.
	Token string
	// Refresh is how often the queue view samples the queues: 0 for the
	// default, 1s, else at least MinRefresh. Every open page samples on
	// its own, so a page costs a round trip per queue per interval.
	Refresh time.Duration
	// ErrorLog receives the HTTP server's own errors (nil: discarded).
	ErrorLog *log.Logger
	// ReadOnly serves the page without its actions: no queue reports an
	// action feature, so the page shows no action's control, and every
	// request that is not a read (any method but GET, HEAD and OPTIONS)
	// is refused with 403, whatever token it carries.
	ReadOnly bool
	// TLS, if not nil, serves the page over TLS with this configuration
	// (it must hold a certificate); the access token's cookie is then
	// marked Secure.
	TLS *tls.Config
}

// Server is rebound's browser page and its JSON API.
type Server struct {
	model   Model
	queues  []Queue
	remote  bool
	token   string // access token, remote only
	session string // the cookie's value for token: cookieValue(token)
	csrf    string // per-process token the page sends with every POST
	refresh time.Duration
	errLog  *log.Logger
	// readOnly: no actions (Config.ReadOnly).
	readOnly bool
	tls      *tls.Config
	page     *template.Template
	jobDoc   *template.Template
	static   map[string]staticFile
}

type staticFile struct {
	body  []byte
	etag  string
	ctype string
}

// MinRefresh is the shortest refresh interval: an open page samples every
// queue once per interval, and a page at 1ns would send Redis more than a
// hundred thousand commands a second.
const MinRefresh = 250 * time.Millisecond

// MinTokenLen is the shortest access token a remote server accepts, in
// characters.
const MinTokenLen = 16

// cookieValue is what the browser's cookie holds for an access token: a
// digest of it in base64url. A token may hold any bytes, but a cookie
// only a few: net/http drops ';', '"', '\\', spaces and every byte
// beyond ASCII from a cookie's value, which would lock every browser out.
// The digest also keeps the token itself out of the browser's store.
func cookieValue(token string) string {
	sum := sha256.Sum256([]byte("rebound ui session cookie\x00" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Model == nil {
		return nil, errors.New("ui: no Model, want the computation behind the curve view")
	}
	if n := utf8.RuneCountInString(cfg.Token); cfg.Remote && n < MinTokenLen {
		return nil, fmt.Errorf("ui: a server reachable beyond loopback needs an access token of at least %d characters, got %d", MinTokenLen, n)
	}
	seen := map[string]bool{}
	for i, q := range cfg.Queues {
		if q == nil {
			return nil, fmt.Errorf("ui: queue %d is nil", i)
		}
		if seen[q.Name()] {
			return nil, fmt.Errorf("ui: queue %q is given twice, want each queue once", q.Name())
		}
		seen[q.Name()] = true
	}
	if cfg.Refresh != 0 && cfg.Refresh < MinRefresh {
		return nil, fmt.Errorf("ui: refresh interval %s is below %s, the shortest, want an interval such as 1s (0 for the default)", cfg.Refresh, MinRefresh)
	}
	s := &Server{
		model:    cfg.Model,
		queues:   cfg.Queues,
		remote:   cfg.Remote,
		csrf:     rand.Text(),
		refresh:  cfg.Refresh,
		errLog:   cfg.ErrorLog,
		readOnly: cfg.ReadOnly,
		static:   map[string]staticFile{},
	}
	if cfg.TLS != nil {
		if len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetCertificate == nil {
			return nil, errors.New("ui: the TLS configuration holds no certificate, want one (tls.LoadX509KeyPair)")
		}
		s.tls = cfg.TLS.Clone()
	}
	if s.refresh == 0 {
		s.refresh = time.Second
	}
	if s.remote {
		s.token = cfg.Token
		s.session = cookieValue(cfg.Token)
	}
	if s.errLog == nil {
		s.errLog = log.New(discard{}, "", 0)
	}
	var err error
	s.page, err = template.ParseFS(assets, "assets/index.html")
	if err != nil {
		return nil, fmt.Errorf("ui: page template: %w", err)
	}
	s.jobDoc, err = template.ParseFS(assets, "assets/job.html")
	if err != nil {
		return nil, fmt.Errorf("ui: job page template: %w", err)
	}
	err = fs.WalkDir(assets, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || name == "assets/index.html" || name == "assets/job.html" {
			return err
		}
		body, err := assets.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		s.static["/"+strings.TrimPrefix(name, "assets/")] = staticFile{body, `"` + hex.EncodeToString(sum[:8]) + `"`, ctype}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ui: assets: %w", err)
	}
	return s, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Handler returns the page and its API behind the server's checks: the
// Host check on loopback, the access token beyond it, and cross-origin
// and per-process token checks on every state-changing request.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /job", s.serveJobPage)
	for name := range s.static {
		mux.HandleFunc("GET "+name, s.serveStatic)
	}
	mux.HandleFunc("GET /api/curve", s.curve)
	mux.HandleFunc("GET /api/queues", s.queueList)
	mux.HandleFunc("GET /api/queues/events", s.events)
	mux.HandleFunc("GET /api/job", s.job)
	mux.HandleFunc("GET /api/jobs", s.jobs)
	mux.HandleFunc("GET /api/find", s.find)
	mux.HandleFunc("GET /api/jobpage", s.jobPage)
	mux.HandleFunc("GET /api/clamp", s.clamp)
	mux.HandleFunc("POST /api/action", s.action)
	mux.HandleFunc("GET /api/groups", s.groups)
	mux.HandleFunc("GET /api/count", s.count)
	mux.HandleFunc("POST /api/bulk", s.bulk)
	mux.HandleFunc("GET /api/redrive", s.redriveStatus)
	mux.HandleFunc("POST /api/redrive", s.redrive)

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusForbidden, "cross-origin request refused: actions are taken from this page only")
	}))
	var h http.Handler = s.checkToken(mux)
	h = s.refuseWrites(h)
	h = cop.Handler(h)
	h = s.authorize(h)
	h = s.checkHost(h)
	return secureHeaders(h)
}

// Serve serves the page on ln until ctx ends, then shuts down, giving
// requests in flight a moment to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{
		Handler: s.Handler(),
		// Anyone who reaches the port, without the token too, could hold
		// connections open and pin file descriptors: a request's header
		// and body must arrive, and its answer be taken, within their
		// timeouts, and a connection left idle between requests is
		// closed. The event stream, which stays open, lifts its read
		// deadline and sets its write deadline per event.
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		// Requests, the event stream among them, end with ctx.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    s.errLog,
	}
	errc := make(chan error, 1)
	if s.tls != nil {
		// HTTP/1.1 only: the timeouts above and the event stream's
		// deadlines are per connection.
		srv.TLSConfig = s.tls
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Requests in flight get a grace period to finish; connections that
	// stay open past it (a browser's idle preconnect, say) are closed.
	sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdownGrace is how long Serve lets requests finish once its context
// ends.
const shutdownGrace = 2 * time.Second

// The server's timeouts: for a request's header, for the whole request,
// for its answer (and each event of the event stream), and for a
// keep-alive connection left idle. (Tests shrink them.)
var (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
)

// tokenHeader carries the page's per-process token on every POST.
const tokenHeader = "X-Rebound-Token"

// cookieName holds the access token of a remote server in the browser.
const cookieName = "rebound_ui_token"

func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

// checkHost refuses, on loopback, requests whose Host is not a loopback
// address or localhost: a page on another site that rebinds its own name to
// 127.0.0.1 sends its own name as Host.
func (s *Server) checkHost(h http.Handler) http.Handler {
	if s.remote {
		return h // every request needs the token instead
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("host %q refused: this server answers on loopback only (127.0.0.1, ::1 or localhost)", r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether hostport names this machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorize requires the access token of a remote server: from the token
// query parameter (swapped for a cookie, and dropped from the address
// bar), the cookie, or an Authorization: Bearer header.
func (s *Server) authorize(h http.Handler) http.Handler {
	if !s.remote {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("token") {
			if !equalTokens(q.Get("token"), s.token) {
				writeError(w, http.StatusUnauthorized, "wrong token: open the address rebound ui printed")
				return
			}
			http.SetCookie(w, &http.Cookie{
				Name: cookieName, Value: s.session, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
			})
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		ok := false
		if c, err := r.Cookie(cookieName); err == nil {
			ok = equalTokens(c.Value, s.session)
		}
		if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
			ok = equalTokens(strings.TrimPrefix(a, "Bearer "), s.token)
		}
		if !ok {
			writeError(w, http.StatusUnauthorized, "this server needs its access token: open the address rebound ui printed (it ends in ?token=...)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkToken refuses state-changing requests that lack the page's
// per-process token.
func (s *Server) checkToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if !equalTokens(r.Header.Get(tokenHeader), s.csrf) {
				writeError(w, http.StatusForbidden, "missing or wrong "+tokenHeader+": actions are taken from this page only")
				return
			}
			if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, "want Content-Type: application/json")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// readOnlyRefusal is what a read-only server answers a request that is
// not a read.
const readOnlyRefusal = "this server is read-only (rebound ui -read-only): it takes no actions; serve the page without -read-only to act on queues"

// refuseWrites refuses, on a read-only server, every request that is not
// a read, before any other check of it: no token makes it an action.
func (s *Server) refuseWrites(h http.Handler) http.Handler {
	if !s.readOnly {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			h.ServeHTTP(w, r)
		default:
			writeError(w, http.StatusForbidden, readOnlyRefusal)
		}
	})
}

// equalTokens compares a presented token with the expected one in time
// that does not depend on where they differ.
func equalTokens(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	var diff byte
	for i := range a {
		diff |= a[i] ^ b[i]
	}
	return diff == 0 && want != ""
}

// pageData is what the page templates are given.
type pageData struct {
	Token    string
	Queues   bool
	ReadOnly bool
	// MaxInt is the largest attempt the clamp view takes, math.MaxInt.
	MaxInt string
}

func (s *Server) servePage(w http.ResponseWriter, _ *http.Request) {
	s.render(w, s.page)
}

// serveJobPage serves a job's page; the job it shows is named in its
// query (queueKey and idKey, or queue and id) and read by its script.
func (s *Server) serveJobPage(w http.ResponseWriter, _ *http.Request) {
	s.render(w, s.jobDoc)
}

func (s *Server) render(w http.ResponseWriter, t *template.Template) {
	var buf bytes.Buffer
	err := t.Execute(&buf, pageData{s.csrf, len(s.queues) > 0, s.readOnly, strconv.Itoa(math.MaxInt)})
	if err != nil {
		s.errLog.Printf("rebound ui: render page: %v", err)
		http.Error(w, "rebound ui: cannot render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) serveStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := s.static[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"rebound ui: cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}
