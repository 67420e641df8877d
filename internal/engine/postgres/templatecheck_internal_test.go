package postgres

import (
	"strings"
	"testing"
)

// TestCopyConf: a copy's postgresql.conf keeps initdb's settings, one per
// line, and refuses any other line.
func TestCopyConf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, conf string
		want       string // a line the copy holds; "" when refused
	}{
		{"initdb's", "# comment\nmax_connections = 100\t\t\t# (change requires restart)\n", "max_connections = 100\n"},
		{"quoted", "timezone = 'Etc/UTC'\n", "timezone = 'Etc/UTC'\n"},
		{"hba_file", "max_connections = 100\nhba_file = '/tmp/trust'\n", ""},
		{"include", "include '/tmp/x.conf'\n", ""},
		{"include_dir", "include_dir = '/tmp'\n", ""},
		{"escaped quote", "timezone = 'a\\' hba_file = x'\n", ""},
		{"two on a line", "max_connections = 100 shared_buffers = 1MB\n", ""},
		{"upper case", "HBA_FILE = '/tmp/trust'\n", ""},
	} {
		got, err := copyConf([]byte(c.conf))
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s: taken: %q", c.name, got)
		case c.want != "" && (err != nil || !strings.Contains(string(got), c.want) || !strings.HasSuffix(string(got), "include 'dbrig.conf'\n")):
			t.Errorf("%s: %q (%v), want it to hold %q and end with the include", c.name, got, err, c.want)
		}
	}
}
