package mariadb

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
)

// tlsParams are the URI parameters that ask for TLS: go-sql-driver's
// tls= and MySQL's ssl-mode with its files (ssl_mode alike).
var tlsParams = []string{"tls", "ssl-mode", "ssl-ca", "ssl-cert", "ssl-key"}

// tlsParam is the parameter's name as tlsParams spell it, or "".
func tlsParam(key string) string {
	k := strings.ReplaceAll(strings.ToLower(key), "_", "-")
	for _, p := range tlsParams {
		if k == p {
			return p
		}
	}
	return ""
}

// tlsModes map go-sql-driver's tls= values and MySQL's ssl-mode values
// onto the engine-neutral modes (libpq's words).
var (
	driverTLSModes = map[string]string{"false": "disable", "preferred": "prefer", "skip-verify": "require", "true": "verify-full"}
	sslModeModes   = map[string]string{"disabled": "disable", "preferred": "prefer", "required": "require", "verify_ca": "verify-ca", "verify_identity": "verify-full"}
)

// parseTLS reads the TLS parameters of a URI's query. With none, a target
// gets what the mysql client does: TLS when the server offers it
// (PREFERRED), or VERIFY_CA when only ssl-ca is given.
func parseTLS(query url.Values) (engine.TLS, error) {
	get := func(name string) string {
		for k, v := range query {
			if tlsParam(k) == name && len(v) > 0 {
				return v[len(v)-1]
			}
		}
		return ""
	}
	t := engine.TLS{RootCert: get("ssl-ca"), Cert: get("ssl-cert"), Key: get("ssl-key")}
	driverMode, sslMode := get("tls"), get("ssl-mode")
	switch {
	case driverMode != "" && sslMode != "":
		return engine.TLS{}, errors.New("both tls= and ssl-mode= ask for TLS: give one")
	case driverMode != "":
		if t.Mode = driverTLSModes[strings.ToLower(driverMode)]; t.Mode == "" {
			return engine.TLS{}, fmt.Errorf("tls=%s is not one of true, false, skip-verify, preferred", driverMode)
		}
	case sslMode != "":
		if t.Mode = sslModeModes[strings.ToLower(sslMode)]; t.Mode == "" {
			return engine.TLS{}, fmt.Errorf("ssl-mode=%s is not one of DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY", sslMode)
		}
	case t.RootCert != "":
		t.Mode = "verify-ca"
	default:
		t.Mode = "prefer"
	}
	if (t.Cert == "") != (t.Key == "") {
		return engine.TLS{}, errors.New("ssl-cert and ssl-key go together: give both or neither")
	}
	return t, nil
}

// tlsConfig is the Go TLS configuration of a login to host (nil for plain
// text: a server dbrig started, "disable", or a socket, which MariaDB
// counts as secure as the mysql client does) and whether the driver may
// fall back to plain text when the server offers no TLS ("prefer").
func tlsConfig(t engine.TLS, host string, unix bool) (*tls.Config, bool, error) {
	if !t.Encrypts() || unix {
		return nil, false, nil
	}
	cfg := &tls.Config{ServerName: t.VerifyHost(host)}
	if t.RootCert != "" {
		pem, err := os.ReadFile(t.RootCert)
		if err != nil {
			return nil, false, fmt.Errorf("ssl-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, false, fmt.Errorf("ssl-ca %s: no PEM certificate in it", t.RootCert)
		}
	}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, false, fmt.Errorf("ssl-cert and ssl-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	switch t.Mode {
	case "allow", "prefer", "require":
		cfg.InsecureSkipVerify = true
	case "verify-ca":
		// The chain is checked, the name is not (MySQL's VERIFY_CA).
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = verifyChain(cfg.RootCAs)
	}
	return cfg, t.Mode == "prefer" || t.Mode == "allow", nil
}

// verifyChain checks that the server's certificate chains to roots (the
// system's when nil), whatever name it carries.
func verifyChain(roots *x509.CertPool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		var leaf *x509.Certificate
		for i, der := range raw {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return fmt.Errorf("the server's certificate: %w", err)
			}
			if i == 0 {
				leaf = c
			} else {
				opts.Intermediates.AddCert(c)
			}
		}
		_, err := leaf.Verify(opts)
		return err
	}
}

// registerTLS registers cfg with the driver under a name of this login's
// own, so that a DSN made from the configuration (FormatDSN) keeps asking
// for it; the name is the same for the same request, so a login opened
// again replaces its entry rather than adding one.
func registerTLS(t engine.TLS, host string, cfg *tls.Config) (string, error) {
	sum := sha256.Sum256([]byte(strings.Join([]string{t.Mode, t.RootCert, t.Cert, t.Key, t.VerifyHost(host)}, "\x00")))
	name := "dbrig-" + hex.EncodeToString(sum[:8])
	if err := mysql.RegisterTLSConfig(name, cfg); err != nil {
		return "", err
	}
	return name, nil
}
