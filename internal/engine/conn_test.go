package engine

import "testing"

// TestViaKeepsTheServerName: a proxy in front of a server moves the
// login's host to the proxy's address, and TLS must still check the
// certificate against the server's own name.
func TestViaKeepsTheServerName(t *testing.T) {
	t.Parallel()
	c := NewConn("postgres", "db.example", 5432, "app", "shop", "pw")
	c.TLS = TLS{Mode: "verify-full", RootCert: "/ca.crt"}
	via, err := c.Via("127.0.0.1:6432")
	if err != nil {
		t.Fatal(err)
	}
	if via.Host != "127.0.0.1" || via.TLS.ServerName != "db.example" || via.TLS.VerifyHost(via.Host) != "db.example" {
		t.Errorf("Via = %s with %+v: want the proxy's address and the server's name", via, via.TLS)
	}
	twice, err := via.Via("127.0.0.1:7432")
	if err != nil || twice.TLS.ServerName != "db.example" {
		t.Errorf("a second proxy: %+v (%v), want db.example kept", twice.TLS, err)
	}
	if back := via.Seal().Open(); back != via {
		t.Errorf("Seal/Open = %+v, want %+v", back, via)
	}
	plain, err := NewConn("postgres", "127.0.0.1", 5432, "dbrig", "x", "pw").Via("127.0.0.1:6432")
	if err != nil || plain.TLS != (TLS{}) {
		t.Errorf("Via gave a plain login a TLS name: %+v (%v)", plain.TLS, err)
	}
}
