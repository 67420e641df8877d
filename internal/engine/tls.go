package engine

// TLS is what a user asked of a login's encryption, in libpq's terms
// (MariaDB's tls= and ssl-mode= are mapped onto them by its ParseURI).
// Each engine's ParseURI fills it for a server the user runs; the zero
// value is a server dbrig started, which is reached in plain text over
// loopback or its private socket. The fields are file paths, read by
// whoever connects: dbrig, its child programs (pg_dump), or a server that
// connects to another (a subscription).
type TLS struct {
	// Mode is "disable", "allow", "prefer", "require", "verify-ca" or
	// "verify-full"; "" is a server dbrig started (plain).
	Mode string `json:"mode,omitempty"`
	// RootCert is the CA the server's certificate must chain to ("" for
	// the system's CAs; PostgreSQL's "system" alike).
	RootCert string `json:"root_cert,omitempty"`
	// Cert and Key are a client certificate and its key.
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
	// ServerName is the host name the server's certificate is checked
	// against when the login goes through a proxy (Via), which moves Host
	// to the proxy's address; "" means Host.
	ServerName string `json:"server_name,omitempty"`
}

// Encrypts reports whether the login asks for TLS at all (also when it
// would settle for plain text, as "prefer" does).
func (t TLS) Encrypts() bool { return t.Mode != "" && t.Mode != "disable" }

// VerifyHost is the name the server's certificate must carry under
// "verify-full", for a login to host.
func (t TLS) VerifyHost(host string) string {
	if t.ServerName != "" {
		return t.ServerName
	}
	return host
}
