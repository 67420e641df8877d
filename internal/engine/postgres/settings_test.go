package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// TestStudySetting is the name rule a study file meets at parse, with no
// server: performance settings pass; what decides where the server
// listens, who logs in, which files, commands and libraries it uses is
// refused as dbrig's, and anything else the list lacks is refused too.
func TestStudySetting(t *testing.T) {
	t.Parallel()
	e := postgres.New("")
	tests := []struct {
		name    string
		says    string // "" = allowed
		closest string // "*": any
	}{
		{"shared_buffers", "", ""},
		{"Synchronous_Commit", "", ""},
		{"wal_level", "", ""},
		{"max_parallel_workers_per_gather", "", ""},
		{"client_min_messages", "", ""},
		{"listen_addresses", "decides where the server listens", ""},
		{"port", "decides where the server listens", ""},
		{"hba_file", "decides who may log in", ""},
		{"ident_file", "decides who may log in", ""},
		{"password_encryption", "decides who may log in", ""},
		{"data_directory", "decides which files", ""},
		{"config_file", "decides which files", ""},
		{"include", "decides which files", ""},
		{"stats_temp_directory", "decides which files", ""},
		{"archive_command", "decides which shell commands", ""},
		{"restore_command", "decides which shell commands", ""},
		{"ssl_passphrase_command", "decides which shell commands", ""},
		{"archive_library", "decides which libraries", ""},
		{"shared_preload_libraries", "decides which libraries", ""},
		{"local_preload_libraries", "decides which libraries", ""},
		{"jit_provider", "decides which libraries", ""},
		{"ssl", "decides the server's TLS", ""},
		{"log_directory", "decides what the server logs and where", ""},
		{"primary_conninfo", "decides the server's replication connections", ""},
		{"cluster_name", "ask for it to be added to the list in internal/engine/postgres/settings.go", ""},
		{"auto_explain.log_min_duration", "dbrig's list of PostgreSQL's has no", "*"},
		{"synchronus_commit", `has no synchronus_commit (did you mean "synchronous_commit"?)`, "synchronous_commit"},
		{"work_mem\n", "dbrig's list of PostgreSQL's has no", "*"},
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
