package mariadb_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
)

// TestStudySetting is the name rule a study file meets at parse, with no
// server: performance options in any spelling pass; what decides where the
// server listens, who logs in, which files, SQL and libraries it uses is
// refused as dbrig's, and anything else the list lacks is refused too.
func TestStudySetting(t *testing.T) {
	t.Parallel()
	e := mariadb.New("")
	tests := []struct {
		name    string
		says    string // "" = allowed
		closest string // "*": any
	}{
		{"innodb_buffer_pool_size", "", ""},
		{"Innodb-Flush-Log-At-Trx-Commit", "", ""},
		{"loose_max_connections", "", ""},
		{"skip_log_bin", "", ""},
		{"skip-innodb-doublewrite", "", ""},
		{"innodb_page_size", "", ""},
		{"port", "decides where the server listens", ""},
		{"bind-address", "decides where the server listens", ""},
		{"loose_skip_networking", "decides where the server listens", ""},
		{"enable_skip_grant_tables", "decides who may log in", ""},
		{"user", "decides which account the server runs as", ""},
		{"datadir", "decides which files", ""},
		{"innodb_data_file_path", "decides which files", ""},
		{"tmpdir", "decides which files", ""},
		{"init_connect", "decides who may log in", ""},
		{"plugin_load_add", "decides which libraries", ""},
		{"plugin_dir", "decides which libraries", ""},
		{"general_log_file", "decides what the server logs", ""},
		{"log_bin", "decides what the server logs", ""},
		{"ssl_key", "decides the server's TLS", ""},
		{"master_host", "decides the server's replication connections", ""},
		{"maximum_max_connections", "dbrig's list of MariaDB's has no maximum_max_connections", "*"},
		{"sql_mode", "ask for it to be added to the list in internal/engine/mariadb/settings.go", ""},
		{"innodb_bufer_pool_size", "has no innodb_bufer_pool_size (did you mean \"innodb_buffer_pool_size\"?)", "innodb_buffer_pool_size"},
		{" max_connections", "dbrig's list of MariaDB's has no", "*"},
	}
	for _, tt := range tests {
		err := e.StudySetting(tt.name)
		if tt.says == "" {
			if err != nil {
				t.Errorf("StudySetting(%q) = %v, want it allowed", tt.name, err)
			}
			continue
		}
		var se *engine.SettingError
		if !errors.As(err, &se) || !se.NameRefused || !strings.Contains(se.Error(), tt.says) ||
			!strings.HasPrefix(se.Msg, "a study may vary performance settings only") || (tt.closest != "*" && se.Closest != tt.closest) {
			t.Errorf("StudySetting(%q) = %#v, want a refusal saying %q (closest %q)", tt.name, err, tt.says, tt.closest)
		}
	}
}
