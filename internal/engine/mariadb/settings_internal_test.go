package mariadb

import (
	"slices"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
)

// A trimmed copy of `mariadbd --verbose --help` (10.11.19).
const helpSample = `Usage: /usr/sbin/mariadbd [OPTIONS]

  --allow-suspicious-udfs 
                      Allows use of user-defined functions
  --alter-algorithm[=name] 
                      Specify the alter table algorithm.
  -h, --datadir=name  Path to the database root directory
  --general-log       Log connections and queries to a table or log file.
  --innodb-buffer-pool-size=# 
                      The size of the memory buffer InnoDB uses
  --skip-grant-tables Start without grant tables.

Variables (--variable-name=value)
and boolean options {FALSE|TRUE}                             Value (after reading options)
------------------------------------------------------------ -------------
allow-suspicious-udfs                                        FALSE
alter-algorithm                                              DEFAULT
innodb-buffer-pool-size                                      134217728
innodb-doublewrite                                           TRUE
wsrep-slave-FK-checks                                        TRUE
wsrep-sst-auth                                               (No default value)

To see what variables a running server is using, type
`

func TestParseHelp(t *testing.T) {
	c := parseHelp([]byte(helpSample))
	tests := []struct {
		name  string
		known bool
	}{
		{"allow_suspicious_udfs", true},
		{"alter_algorithm", true},
		{"datadir", true},
		{"general_log", true},
		{"skip_general_log", true}, // any option takes skip- (off or 0)
		{"disable_general_log", true},
		{"enable_innodb_doublewrite", true},
		{"skip_alter_algorithm", true},
		{"skip_innodb_bufer_pool_size", false},
		{"loose_innodb_buffer_pool_size", true},
		{"maximum_innodb_buffer_pool_size", true},
		{"wsrep_slave_fk_checks", true}, // the server ignores case
		{"wsrep_sst_auth", true},
		{"innodb_bufer_pool_size", false},
		{"to", false}, // prose after the table is not an option
		{"usage:", false},
	}
	for _, tt := range tests {
		if got := c.known(tt.name); got != tt.known {
			t.Errorf("known(%q) = %v, want %v", tt.name, got, tt.known)
		}
	}
	if got := engine.Closest("innodb_bufer_pool_size", c.list()); got != "innodb_buffer_pool_size" {
		t.Errorf("Closest = %q, want innodb_buffer_pool_size", got)
	}
}

func TestParserProblems(t *testing.T) {
	tests := []struct {
		name   string
		failed bool
		stderr string
		want   []string
	}{
		{"clean", false, "2026-11-22 12:41:59 0 [Warning] Could not increase number of max_open_files to more than 20000 (request: 32184)\n", nil},
		{"bad size", false, `2026-11-22 12:42:04 0 [ERROR] Unknown suffix 'l' used for variable 'innodb-buffer-pool-size' (value 'lots'). Legal suffix characters are: K, M, G, T, P, E
2026-11-22 12:42:04 0 [ERROR] /usr/sbin/mariadbd: Error while setting value 'lots' to 'innodb-buffer-pool-size'
2026-11-22 12:42:04 0 [ERROR] Parsing options for plugin 'InnoDB' failed. Disabling plugin
`, []string{"Unknown suffix 'l' used for variable 'innodb-buffer-pool-size' (value 'lots'). Legal suffix characters are: K, M, G, T, P, E",
			"Error while setting value 'lots' to 'innodb-buffer-pool-size'"}},
		{"clamped", false, "2026-11-22 12:42:04 0 [Warning] option 'innodb-flush-log-at-trx-commit': unsigned value 7 adjusted to 3\n",
			[]string{"option 'innodb-flush-log-at-trx-commit': unsigned value 7 adjusted to 3"}},
		{"buffered", false, "2026-11-22 12:45:10 0 [Warning] Buffered warning: option 'performance_schema': boolean value 'maybe' wasn't recognized. Set to OFF.\n",
			[]string{"option 'performance_schema': boolean value 'maybe' wasn't recognized. Set to OFF."}},
		{"untagged, twice, on failure", true, "/usr/sbin/mariadbd: Character set 'nope' is not a compiled character set\n/usr/sbin/mariadbd: Character set 'nope' is not a compiled character set\n",
			[]string{"Character set 'nope' is not a compiled character set"}},
		{"untagged on success", false, "Warning: Memory not freed: 2232\n", nil},
		{"advice is not a refusal", false, "2026-11-22 12:45:10 0 [Warning] No argument was provided to --log-bin and neither --log-basename or --log-bin-index where used\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parserProblems(tt.stderr, "/usr/sbin/mariadbd", tt.failed)
			if !slices.Equal(got, tt.want) {
				t.Errorf("parserProblems =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestSQLValues(t *testing.T) {
	tests := []struct{ in, want string }{
		{"42", "42"},
		{"0.5", "0.5"},
		{"64M", "67108864"},
		{"1g", "1073741824"},
		{"ANSI", "'ANSI'"},
		{"it's", "'it''s'"},
		{`a\b`, `'a\\b'`},
		{"ON", "'ON'"},
	}
	for _, tt := range tests {
		if got := sqlValue(tt.in); got != tt.want {
			t.Errorf("sqlValue(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	set := []struct {
		typ, in, want string
		ok            bool
	}{
		{"BIGINT UNSIGNED", "77", "77", true},
		{"BIGINT UNSIGNED", "16M", "16777216", true},
		{"BIGINT UNSIGNED", "lots", "", false},
		{"INT", "-1", "-1", true},
		{"DOUBLE", "0.25", "0.25", true},
		{"BOOLEAN", "1", "ON", true},
		{"BOOLEAN", "off", "OFF", true},
		{"BOOLEAN", "maybe", "", false},
		{"ENUM", "O_DIRECT", "'O_DIRECT'", true},
		{"ENUM", "2", "2", true},
		{"SET", "ANSI,NO_ZERO_DATE", "'ANSI,NO_ZERO_DATE'", true},
	}
	for _, tt := range set {
		got, ok := setLiteral(tt.typ, tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("setLiteral(%s, %q) = %s, %v; want %s, %v", tt.typ, tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNativePasswordHash(t *testing.T) {
	// The server's own PASSWORD('password').
	if got, want := nativePasswordHash("password"), "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"; got != want {
		t.Errorf("nativePasswordHash = %s, want %s", got, want)
	}
}

func TestConfigCarriesTheLoginAndSession(t *testing.T) {
	tcp := engine.NewConn(Name, "127.0.0.1", 3307, "app", "shop", "s3cret").
		WithSession(map[string]string{"sql_mode": "ANSI", "max_statement_time": "2", "sort_buffer_size": "4M"})
	cfg, err := Config(tcp)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Net != "tcp" || cfg.Addr != "127.0.0.1:3307" || cfg.User != "app" || cfg.Passwd != "s3cret" || cfg.DBName != "shop" {
		t.Errorf("Config(tcp) = %s %s %s %s", cfg.Net, cfg.Addr, cfg.User, cfg.DBName)
	}
	if cfg.Params["sql_mode"] != "'ANSI'" || cfg.Params["max_statement_time"] != "2" || cfg.Params["sort_buffer_size"] != "4194304" {
		t.Errorf("session params = %v", cfg.Params)
	}
	unix := engine.NewConn(Name, "/run/x/mysqld.sock", 0, "app", "", "s3cret")
	if cfg, _ := Config(unix); cfg.Net != "unix" || cfg.Addr != "/run/x/mysqld.sock" {
		t.Errorf("Config(unix) = %s %s", cfg.Net, cfg.Addr)
	}
	if cfg, _ := Config(tcp.WithSession(map[string]string{"sql_mode": "'; DROP DATABASE shop; --"})); cfg.Params["sql_mode"] != "'''; DROP DATABASE shop; --'" {
		t.Errorf("a value is not quoted: %s", cfg.Params["sql_mode"])
	}
	bad := tcp.WithSession(map[string]string{"x; DROP DATABASE shop; --": "1"})
	if _, err := Config(bad); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Config(bad session name) = %v, want an error without the password", err)
	}
	dsn, err := DSN(tcp)
	if err != nil || !strings.HasPrefix(dsn, "app:s3cret@tcp(127.0.0.1:3307)/shop?") {
		t.Errorf("DSN = %q, %v", dsn, err)
	}
}
