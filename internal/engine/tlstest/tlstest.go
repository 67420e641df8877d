// Package tlstest makes, for tests, a certificate authority and a server
// certificate it signed, with crypto/x509, so that a test server can be
// started with TLS on and a client can ask it for each of libpq's and
// MySQL's modes.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
)

// Files are PEM files in a directory of their own: a CA, a server
// certificate it signed and the certificate's key, and a second CA that
// signed nothing (the wrong CA for a client to trust).
type Files struct {
	Dir                    string
	CA, Cert, Key, OtherCA string
}

// Make writes the files into a fresh directory the server account can
// enter and read (the key is the account's, mode 0600, as PostgreSQL
// demands), removed when the test ends. The certificate is valid for
// hosts: host names and IP addresses.
func Make(tb testing.TB, hosts ...string) Files {
	tb.Helper()
	dir, err := os.MkdirTemp("", "dbrig-tls-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	f := Files{Dir: dir, CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, "server.crt"),
		Key: filepath.Join(dir, "server.key"), OtherCA: filepath.Join(dir, "other-ca.crt")}
	caKey, caCert := authority(tb, "dbrig test CA")
	_, otherCert := authority(tb, "dbrig test CA that signed nothing")
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	write(tb, f.CA, "CERTIFICATE", caCert.Raw, 0o644)
	write(tb, f.OtherCA, "CERTIFICATE", otherCert.Raw, 0o644)
	write(tb, f.Cert, "CERTIFICATE", der, 0o644)
	write(tb, f.Key, "PRIVATE KEY", keyDER, 0o600)
	account, err := engine.FindServerUser()
	if err != nil {
		tb.Fatal(err)
	}
	if err := account.Chown(f.Key); err != nil {
		tb.Fatal(err)
	}
	return f
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// authority makes a self-signed CA.
func authority(tb testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate) {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return key, cert
}

func write(tb testing.TB, path, kind string, der []byte, mode os.FileMode) {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode); err != nil {
		tb.Fatal(err)
	}
}
