package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// uiTLS returns the TLS configuration -tls-cert and -tls-key, or
// -tls-self-signed, ask for, nil for none, and a line that describes the
// certificate to the operator.
func uiTLS(certFile, keyFile string, selfSigned bool, host string) (*tls.Config, string, error) {
	switch {
	case selfSigned && (certFile != "" || keyFile != ""):
		return nil, "", errors.New("-tls-self-signed makes its own certificate, want it without -tls-cert and -tls-key")
	case (certFile == "") != (keyFile == ""):
		return nil, "", errors.New("-tls-cert and -tls-key go together, want both: the certificate file and its private key's")
	case selfSigned:
		cert, err := selfSignedCert(host, time.Now())
		if err != nil {
			return nil, "", fmt.Errorf("-tls-self-signed: %v", err)
		}
		sum := sha256.Sum256(cert.Certificate[0])
		return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
			"a self-signed certificate, SHA-256 fingerprint " + fingerprint(sum[:]) + ": check it against the browser's warning before you accept it", nil
	case certFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, "", fmt.Errorf("-tls-cert %s, -tls-key %s: %v; want a PEM certificate and its PEM private key", certFile, keyFile, err)
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, "the certificate of " + certFile, nil
	}
	return nil, "", nil
}

// selfSignedCert makes a certificate for development, valid 30 days from
// now, for host (the -addr host), localhost, the loopback addresses and
// this machine's name, with a fresh P-256 key that lives only in memory.
func selfSignedCert(host string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "rebound ui (self-signed)"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	names := []string{host}
	if h, err := os.Hostname(); err == nil {
		names = append(names, h)
	}
	for _, n := range names {
		switch ip := net.ParseIP(n); {
		case n == "" || (ip != nil && ip.IsUnspecified()):
		case ip != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// fingerprint writes a digest as colon-separated hex pairs, as browsers
// show a certificate's.
func fingerprint(sum []byte) string {
	h := strings.ToUpper(hex.EncodeToString(sum))
	pairs := make([]string, 0, len(h)/2)
	for i := 0; i < len(h); i += 2 {
		pairs = append(pairs, h[i:i+2])
	}
	return strings.Join(pairs, ":")
}
