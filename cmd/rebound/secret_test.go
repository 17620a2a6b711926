package main

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// No mistake in a URL prints its password: not the URL's own message,
// not the error a parser made of it (go-redis and net/url quote the URL),
// not a connection failure; for every command that takes a URL, and for
// the URL taken from the environment.
func TestURLMistakesDoNotPrintThePassword(t *testing.T) {
	t.Setenv(envRedisURL, "")
	t.Setenv(envPostgresURL, "")
	const secret = "S3cr3t"
	redisURLs := []string{
		"redis://:" + secret + "@host:1/x",
		"redis://:" + secret + "@127.0.0.1:1/0?bogus=1",
		"redis://user:" + secret + "@127.0.0.1:1/0%zz",
		"redis://:" + secret + "@[::1/0",
		"rediss://:" + secret + "@127.0.0.1:1/0?addr=127.0.0.1:2&bogus=1",
		"redis://:" + secret + "%2F@127.0.0.1:1/0?bogus=1",
		"mysql://:" + secret + "@host/x",
	}
	var runs [][]string
	for _, u := range redisURLs {
		runs = append(runs,
			[]string{"ui", "-redis", u, "-queue", "q"},
			[]string{"queue", "-redis", u, "-timeout", "500ms", "counts", "q"},
			[]string{"breaker", "-redis", u, "-timeout", "500ms"})
	}
	for _, u := range []string{
		"postgres://u:" + secret + "@127.0.0.1:1/x?bogus=1",
		"postgres://u:" + secret + "@127.0.0.1:1/x?sslmode=bogus",
		"postgres://u:" + secret + "@127.0.0.1:1/x%zz",
		"host=127.0.0.1 port=1 user=u password=" + secret + " sslmode=bogus",
		"host=127.0.0.1 port=1 user=u password='" + secret + " x' connect_timeout=1",
		"postgres://u:" + secret + "@127.0.0.1:1/x?connect_timeout=1",
	} {
		runs = append(runs, []string{"breaker", "-postgres", u, "-timeout", "2s"})
	}
	for _, args := range runs {
		out, errOut, code := rebound(t, args...)
		if code == exitOK {
			t.Errorf("%q: exit 0, want a failure", args)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%q prints the password:\n%s%s", args, out, errOut)
		}
		if !strings.Contains(errOut, redacted) && !strings.Contains(errOut, "does not answer") && !strings.Contains(errOut, "failed to connect") {
			t.Logf("%q: %s", args, errOut)
		}
	}

	// From the environment: the message names the variable, not the
	// password.
	t.Setenv(envRedisURL, "redis://:"+secret+"@127.0.0.1:1/0?bogus=1")
	for _, args := range [][]string{{"queue", "counts", "q"}, {"ui", "-queue", "q"}, {"breaker"}} {
		_, errOut, code := rebound(t, args...)
		if code != exitUsage || strings.Contains(errOut, secret) || !strings.Contains(errOut, "$"+envRedisURL) {
			t.Errorf("%q with $%s: exit %d, stderr %q; want %d, naming the variable, without the password", args, envRedisURL, code, errOut, exitUsage)
		}
	}
}

// The URL can come from the environment instead of argv, where other
// users of the machine see it.
func TestURLFromEnvironment(t *testing.T) {
	m := miniredis.RunT(t)
	m.RequireAuth("S3cr3t")
	t.Setenv(envPostgresURL, "")
	t.Setenv(envRedisURL, "redis://:S3cr3t@"+m.Addr()+"/0")
	out, errOut, code := rebound(t, "queue", "counts", "emails")
	if code != exitOK || !strings.Contains(out, `queue "emails": running`) {
		t.Errorf("queue counts with $%s: exit %d\n%s%s", envRedisURL, code, out, errOut)
	}
	out, errOut, code = rebound(t, "breaker")
	if code != exitOK || !strings.Contains(out, "no breakers") {
		t.Errorf("breaker with $%s: exit %d\n%s%s", envRedisURL, code, out, errOut)
	}
	// A flag wins over the variable.
	_, errOut, code = rebound(t, "queue", "-redis", "redis://127.0.0.1:1", "-timeout", "300ms", "counts", "emails")
	if code != exitFail || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("-redis beside $%s: exit %d, %s", envRedisURL, code, errOut)
	}
	// A wrong password is reported without the one tried.
	t.Setenv(envRedisURL, "redis://:Wr0ngPass@"+m.Addr()+"/0")
	_, errOut, code = rebound(t, "queue", "counts", "emails")
	if code != exitFail || strings.Contains(errOut, "Wr0ngPass") {
		t.Errorf("a wrong password: exit %d, %s", code, errOut)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"redis://:pw@h:1/0":                   "redis://:xxxxx@h:1/0",
		"redis://u:pw@h:1/0?db=1":             "redis://u:xxxxx@h:1/0?db=1",
		"redis://h:1/0":                       "redis://h:1/0",
		"redis://:p%zzw@h:1/0":                "redis://xxxxx@h:1/0",
		"host=h password=pw user=u":           "host=h password=xxxxx user=u",
		"host=h password='p w' user=u":        "host=h password=xxxxx user=u",
		"postgres://h/db?password=pw&sslmode": "postgres://h/db?password=xxxxx&sslmode",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
