package mariadb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

func TestCheckSettingsWithTheServersCatalogue(t *testing.T) {
	e := mariatest.Engine(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	type refusal struct{ key, says, closest string }
	tests := []struct {
		name     string
		settings map[string]string
		want     []refusal // nil: accepted
	}{
		{"good values in both spellings", map[string]string{
			"innodb_buffer_pool_size": "64M", "innodb-flush-log-at-trx-commit": "2", "Max_Connections": "77",
			"binlog_format": "ROW", "skip_log_bin": "", "innodb_doublewrite": "OFF", "innodb_max_dirty_pages_pct": "0.5",
		}, nil},
		{"misspelt name", map[string]string{"innodb_bufer_pool_size": "64M"},
			[]refusal{{"innodb_bufer_pool_size", "has no innodb_bufer_pool_size", "innodb_buffer_pool_size"}}},
		{"name with no near neighbour", map[string]string{"no_such_setting_at_all": "1"},
			[]refusal{{"no_such_setting_at_all", "has no no_such_setting_at_all", ""}}},
		{"on the list, not in this version", map[string]string{"optimizer_where_cost": "0.032"},
			[]refusal{{"optimizer_where_cost", "unknown MariaDB", ""}}},
		{"malformed size", map[string]string{"innodb_buffer_pool_size": "lots"},
			[]refusal{{"innodb_buffer_pool_size", "want a number", ""}}},
		{"malformed suffix", map[string]string{"innodb_buffer_pool_size": "0.125G"},
			[]refusal{{"innodb_buffer_pool_size", "Unknown suffix", ""}}},
		{"unknown enumeration value", map[string]string{"binlog_format": "BOGUS"},
			[]refusal{{"binlog_format", "Error while setting value", ""}}},
		{"out of range is clamped, so refused", map[string]string{"innodb_flush_log_at_trx_commit": "7"},
			[]refusal{{"innodb_flush_log_at_trx_commit", "adjusted to 3", ""}}},
		{"a word for a number, which mariadbd reads as 0", map[string]string{"innodb_flush_log_at_trx_commit": "maybe", "loose_max_connections": "many", "innodb_max_dirty_pages_pct": "half"},
			[]refusal{{"innodb_flush_log_at_trx_commit", "want a number", ""}, {"innodb_max_dirty_pages_pct", "want a number", ""}, {"loose_max_connections", "want a number", ""}}},
		{"numbers in every form the parser reads", map[string]string{"max_connections": "+90", "innodb_buffer_pool_size": "128M", "innodb_max_dirty_pages_pct": ".5", "max_allowed_packet": "64m", "innodb_flush_log_at_trx_commit": ""}, nil},
		{"unrecognised boolean", map[string]string{"performance_schema": "maybe"},
			[]refusal{{"performance_schema", "wasn't recognized", ""}}},
		{"unknown character set", map[string]string{"character_set_server": "nope"},
			[]refusal{{"character_set_server", "Character set 'nope'", ""}}},
		{"owned", map[string]string{"port": "3306", "bind-address": "0.0.0.0", "loose_skip_networking": "OFF"},
			[]refusal{{"bind_address", "belongs to dbrig", ""}, {"loose_skip_networking", "belongs to dbrig", ""}, {"port", "belongs to dbrig", ""}}},
		{"a newline", map[string]string{"innodb_buffer_pool_size": "64M\n--port=1"},
			[]refusal{{"innodb_buffer_pool_size", "control character", ""}}},
		{"each bad setting is named, good ones pass", map[string]string{
			"max_connections": "abc", "innodb_max_dirty_pages_pct": "x", "innodb_buffer_pool_size": "64M",
		}, []refusal{{"innodb_max_dirty_pages_pct", "innodb_max_dirty_pages_pct", ""}, {"max_connections", "max_connections", ""}}},
		{"one name twice", map[string]string{"max_connections": "10", "max-connections": "20"},
			[]refusal{{"max_connections", "given twice", ""}}},
		{"a plugin is a library dbrig's, and its options are not on the list", map[string]string{
			"plugin_load_add": "server_audit", "server_audit_logging": "ON",
		}, []refusal{{"plugin_load_add", "decides which libraries the server loads", ""}, {"server_audit_logging", "has no server_audit_logging", "*"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := e.CheckSettings(ctx, tt.settings)
			if len(errs) != len(tt.want) {
				t.Fatalf("CheckSettings(%v) = %v, want %d refusals", tt.settings, errs, len(tt.want))
			}
			for n, err := range errs {
				var se *engine.SettingError
				if !errors.As(err, &se) {
					t.Fatalf("error %v is not a *engine.SettingError", err)
				}
				w := tt.want[n]
				if !strings.EqualFold(strings.ReplaceAll(se.Key, "-", "_"), w.key) || !strings.Contains(se.Error(), w.says) || (w.closest != "*" && se.Closest != w.closest) {
					t.Errorf("refusal %d = key %q closest %q: %v; want key %q closest %q saying %q", n, se.Key, se.Closest, se, w.key, w.closest, w.says)
				}
			}
		})
	}
}

// TestFixedAtInitChanged: a change of a setting fixed when the data
// directory is made, in any spelling, needs a new instance; other changes
// do not.
func TestFixedAtInitChanged(t *testing.T) {
	e := mariadb.New("")
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		want     string
	}{
		{"page size", map[string]string{"innodb_page_size": "16k"}, map[string]string{"innodb_page_size": "64k"}, "innodb_page_size"},
		{"page size in another spelling", map[string]string{"innodb_page_size": "16k"}, map[string]string{"Innodb-Page-Size": "16k"}, ""},
		{"page size given first", nil, map[string]string{"innodb_page_size": "64k"}, "innodb_page_size"},
		{"case of table names", map[string]string{"lower_case_table_names": "0"}, map[string]string{"lower_case_table_names": "1"}, "lower_case_table_names"},
		{"a run-time setting", map[string]string{"max_connections": "10", "innodb_page_size": "64k"}, map[string]string{"max_connections": "20", "innodb_page_size": "64k"}, ""},
	} {
		name, changed := e.FixedAtInitChanged(tc.old, tc.new)
		if name != tc.want || changed != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", tc.name, name, changed, tc.want)
		}
	}
}
