package main

import (
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// A Redis or PostgreSQL URL may carry a password, and a mistake in one
// (an unknown option, a bad escape) must not print it: every message that
// shows such a URL, or an error a parser made of it, shows it redacted.
// So that the password need not sit in argv either (where ps and shell
// history see it), the URLs can come from the environment.

// The environment variables a URL flag falls back to when it is not
// given.
const (
	envRedisURL    = "REBOUND_REDIS_URL"
	envPostgresURL = "REBOUND_POSTGRES_URL"
)

// redacted stands in for a password.
const redacted = "xxxxx"

// A connURL is a connection URL and where it came from: the flag's name
// ("-redis") or the environment variable's ("$REBOUND_REDIS_URL").
type connURL struct {
	from, raw string
}

// connFrom returns the URL of flag name, or when the flag is empty that
// of environment variable env.
func connFrom(name, flagValue, env string) connURL {
	if flagValue != "" {
		return connURL{from: name, raw: flagValue}
	}
	if v := os.Getenv(env); v != "" {
		return connURL{from: "$" + env, raw: v}
	}
	return connURL{from: name}
}

// String names the URL for a message, its password redacted:
// `-redis "redis://:xxxxx@host:6379/0"`.
func (c connURL) String() string {
	return c.from + " " + strconv.Quote(redactURL(c.raw))
}

// describe returns err's text with every secret of the URL redacted:
// parsers quote the URL, or a part of it, in their errors.
func (c connURL) describe(err error) string {
	return redactIn(err.Error(), c.raw)
}

// dsnPassword finds a password in a key=value connection string
// (PostgreSQL's "host=h password=secret") or a URL's query
// (?password=secret).
var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)`)

// redactURL returns raw with its password replaced by xxxxx: the
// password of its user information (scheme://user:password@host), and
// any password= parameter or key. Text that does not parse as a URL is
// redacted as far as it looks like one: everything between "://" and the
// last "@".
func redactURL(raw string) string {
	out := raw
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			out = u.Redacted()
		}
	} else if err != nil {
		if i := strings.Index(raw, "://"); i >= 0 {
			if at := strings.LastIndexByte(raw, '@'); at > i+3 {
				out = raw[:i+3] + redacted + raw[at:]
			}
		}
	}
	return dsnPassword.ReplaceAllString(out, "${1}"+redacted)
}

// secrets returns the passwords raw holds, as written and unescaped.
func secrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
			if u, err := url.PathUnescape(s); err == nil && u != s {
				out = append(out, u)
			}
		}
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			info := rest[:at]
			if c := strings.IndexByte(info, ':'); c >= 0 {
				add(info[c+1:])
			} else {
				add(info) // a bare user information may be a password (redis://secret@host)
			}
		}
	}
	for _, m := range dsnPassword.FindAllStringSubmatch(raw, -1) {
		add(strings.Trim(m[2], "'"))
	}
	return out
}

// redactIn returns msg with raw, and every password raw holds, redacted.
func redactIn(msg, raw string) string {
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, redactURL(raw))
	for _, s := range secrets(raw) {
		msg = strings.ReplaceAll(msg, s, redacted)
		if q := url.QueryEscape(s); q != s {
			msg = strings.ReplaceAll(msg, q, redacted)
		}
	}
	return dsnPassword.ReplaceAllString(msg, "${1}"+redacted)
}
