package topology

import "testing"

func TestSameSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		have, want string
		same       bool
	}{
		{"128MB", "128MB", true},
		{"128MB", "131072kB", true}, // PostgreSQL's units are binary
		{"1000kB", "1001kB", false}, // shared_buffers rounded to 8 kB pages
		{"134217728", "128M", true}, // MariaDB reads back bytes
		{"134217728", "131072K", true},
		{"100651008", "16M", false}, // MariaDB's log buffer on a tmpfs
		{"2GB", "2048MB", true},
		{"4GB", "128MB", false},
		{"on", "1", true},
		{"off", "on", false},
		{"OFF", "false", true},
		{"1.1", "1.10", true},
		{"4", "8", false},
		{"128MB", "16384", true},  // the study's bare number is in a base unit only the server knows
		{"16384", "128MB", false}, // a server's bare size is bytes
		{"300", "5min", true},     // a server's bare duration is in the variable's own unit
		{"5min", "300s", true},
		{"5min", "10min", false},
		{"replica", "logical", false},
		{"Replica", "replica", true},
	} {
		if got := SameSetting(c.have, c.want); got != c.same {
			t.Errorf("SameSetting(%q, %q) = %v, want %v", c.have, c.want, got, c.same)
		}
	}
}
