package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rebound ui -remote over TLS: the address is https, the fingerprint it
// prints is the certificate's, the token's cookie is Secure, a request
// without the token is still refused, and plain HTTP to the port gets no
// page.
func TestUIRemoteOverTLS(t *testing.T) {
	const token = "correct-horse-battery-staple"
	page, out := serveCommand(t, "-addr", "127.0.0.1:0", "-remote", "-token", token, "-tls-self-signed")
	u, err := url.Parse(page)
	if err != nil || u.Scheme != "https" {
		t.Fatalf("address %q, want https", page)
	}
	var seen []byte
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // checked below, by the printed fingerprint
			VerifyConnection: func(cs tls.ConnectionState) error {
				seen = cs.PeerCertificates[0].Raw
				return nil
			},
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	bare := *u
	bare.RawQuery = ""
	res, err := client.Get(bare.String() + "api/queues")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET without the token over TLS = %d, want 401", res.StatusCode)
	}
	sum := sha256.Sum256(seen)
	if !strings.Contains(out.String(), "SHA-256 fingerprint "+fingerprint(sum[:])) {
		t.Errorf("output %q does not print the served certificate's fingerprint", out.String())
	}
	res, err = client.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if cs := res.Cookies(); res.StatusCode != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly {
		t.Errorf("GET the printed address = %d, cookies %+v; want 303 and one Secure, HttpOnly cookie", res.StatusCode, cs)
	}
	res, err = http.Get("http://" + u.Host + "/")
	if err == nil {
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to the TLS port served the page")
		}
	}

	// Plain HTTP on -remote: the cookie is not Secure, and the token is
	// needed as before.
	page, _ = serveCommand(t, "-remote", "-token", token)
	if !strings.HasPrefix(page, "http://") {
		t.Fatalf("address %q, want http", page)
	}
	plain := &http.Client{CheckRedirect: client.CheckRedirect}
	res, err = plain.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if cs := res.Cookies(); len(cs) != 1 || cs[0].Secure {
		t.Errorf("cookies over plain HTTP %+v, want one, not Secure", cs)
	}
	pu, _ := url.Parse(page)
	pu.RawQuery = ""
	if res, err = plain.Get(pu.String()); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("plain HTTP without the token = %d, want 401", res.StatusCode)
	}
}

// -tls-cert and -tls-key serve a certificate from files; the flags are
// checked together.
func TestUITLSFiles(t *testing.T) {
	cert, err := selfSignedCert("127.0.0.1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	page, _ := serveCommand(t, "-tls-cert", certFile, "-tls-key", keyFile)
	pool := x509.NewCertPool()
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	pool.AddCert(leaf)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	res, err := client.Get(page)
	if err != nil {
		t.Fatalf("GET %s with the certificate trusted: %v", page, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(page, "https://127.0.0.1:") {
		t.Errorf("GET %s = %d, want 200", page, res.StatusCode)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-tls-cert", certFile}, "-tls-cert and -tls-key go together"},
		{[]string{"-tls-key", keyFile}, "-tls-cert and -tls-key go together"},
		{[]string{"-tls-self-signed", "-tls-cert", certFile, "-tls-key", keyFile}, "-tls-self-signed makes its own certificate"},
		{[]string{"-tls-cert", keyFile, "-tls-key", certFile}, "want a PEM certificate and its PEM private key"},
	} {
		var out, errb bytes.Buffer
		code := serveUI(context.Background(), tt.args, &out, &errb, func(string) { t.Errorf("%q: served", tt.args) })
		if code != exitUsage || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, errb.String(), exitUsage, tt.want)
		}
	}
}
