package postgres

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// studySettings are the settings a study may vary on PostgreSQL. The list
// was made from PostgreSQL 15's catalogue (`postgres --describe-config`),
// group by group: every setting the built-in studies and the load
// commands' study files set, and the rest of the groups a performance
// study sweeps (memory, the planner's methods and costs, parallel query,
// JIT, WAL and checkpoints, the background writer, asynchronous I/O,
// vacuum and autovacuum, locks, statistics collection), plus the same
// groups' settings of later versions. Left out on purpose: where the
// server listens, authentication and TLS, file locations, libraries,
// archive and recovery commands, logging, replication connections and
// recovery targets (dbrig's; ownerOf says which), and settings that change
// what SQL means rather than how fast it runs (search_path,
// default_tablespace, row_security ...). Types and ranges are the
// server's own: CheckSettings asks the server's parser.
var studySettings = engine.NewStudySettings(Name, "PostgreSQL", "internal/engine/postgres/settings.go",
	[]string{ // memory
		"shared_buffers", "huge_pages", "huge_page_size", "shared_memory_type", "dynamic_shared_memory_type",
		"min_dynamic_shared_memory", "temp_buffers", "work_mem", "hash_mem_multiplier", "maintenance_work_mem",
		"autovacuum_work_mem", "logical_decoding_work_mem", "vacuum_buffer_usage_limit", "max_stack_depth",
		"max_prepared_transactions", "temp_file_limit", "max_files_per_process", "effective_cache_size",
	},
	[]string{ // connections: how many, not where or who
		"max_connections", "superuser_reserved_connections", "reserved_connections",
	},
	[]string{ // the planner's methods
		"enable_async_append", "enable_bitmapscan", "enable_distinct_reordering", "enable_gathermerge",
		"enable_group_by_reordering", "enable_hashagg", "enable_hashjoin", "enable_incremental_sort",
		"enable_indexonlyscan", "enable_indexscan", "enable_material", "enable_memoize", "enable_mergejoin",
		"enable_nestloop", "enable_parallel_append", "enable_parallel_hash", "enable_partition_pruning",
		"enable_partitionwise_aggregate", "enable_partitionwise_join", "enable_presorted_aggregate",
		"enable_self_join_elimination", "enable_seqscan", "enable_sort", "enable_tidscan",
	},
	[]string{ // the planner's costs and other options
		"seq_page_cost", "random_page_cost", "cpu_tuple_cost", "cpu_index_tuple_cost", "cpu_operator_cost",
		"parallel_setup_cost", "parallel_tuple_cost", "min_parallel_table_scan_size",
		"min_parallel_index_scan_size", "default_statistics_target", "constraint_exclusion",
		"cursor_tuple_fraction", "from_collapse_limit", "join_collapse_limit", "plan_cache_mode",
		"recursive_worktable_factor", "geqo", "geqo_threshold", "geqo_effort", "geqo_pool_size",
		"geqo_generations", "geqo_selection_bias", "geqo_seed",
	},
	[]string{ // parallel query and JIT
		"max_worker_processes", "max_parallel_workers", "max_parallel_workers_per_gather",
		"max_parallel_maintenance_workers", "parallel_leader_participation",
		"jit", "jit_above_cost", "jit_inline_above_cost", "jit_optimize_above_cost",
	},
	[]string{ // WAL, durability and checkpoints
		"wal_level", "fsync", "synchronous_commit", "wal_sync_method", "full_page_writes", "wal_log_hints",
		"wal_compression", "wal_init_zero", "wal_recycle", "wal_buffers", "wal_writer_delay",
		"wal_writer_flush_after", "wal_skip_threshold", "commit_delay", "commit_siblings",
		"checkpoint_timeout", "checkpoint_completion_target", "checkpoint_flush_after", "max_wal_size",
		"min_wal_size", "wal_keep_size", "max_slot_wal_keep_size", "track_commit_timestamp",
		"default_toast_compression",
	},
	[]string{ // replication capacity (the geo-replication study's publisher), not its connections
		"max_wal_senders", "max_replication_slots", "max_logical_replication_workers",
		"max_sync_workers_per_subscription", "max_parallel_apply_workers_per_subscription",
	},
	[]string{ // the background writer and I/O
		"bgwriter_delay", "bgwriter_lru_maxpages", "bgwriter_lru_multiplier", "bgwriter_flush_after",
		"backend_flush_after", "effective_io_concurrency", "maintenance_io_concurrency", "io_combine_limit",
		"io_max_combine_limit", "io_method", "io_workers", "synchronize_seqscans",
	},
	[]string{ // vacuum and autovacuum
		"autovacuum", "autovacuum_max_workers", "autovacuum_worker_slots", "autovacuum_naptime",
		"autovacuum_vacuum_threshold", "autovacuum_vacuum_max_threshold", "autovacuum_vacuum_insert_threshold",
		"autovacuum_analyze_threshold", "autovacuum_vacuum_scale_factor",
		"autovacuum_vacuum_insert_scale_factor", "autovacuum_analyze_scale_factor",
		"autovacuum_freeze_max_age", "autovacuum_multixact_freeze_max_age", "autovacuum_vacuum_cost_delay",
		"autovacuum_vacuum_cost_limit", "vacuum_cost_delay", "vacuum_cost_page_hit", "vacuum_cost_page_miss",
		"vacuum_cost_page_dirty", "vacuum_cost_limit", "vacuum_freeze_min_age", "vacuum_freeze_table_age",
		"vacuum_multixact_freeze_min_age", "vacuum_multixact_freeze_table_age", "vacuum_failsafe_age",
		"vacuum_multixact_failsafe_age", "gin_pending_list_limit",
	},
	[]string{ // locks and statement behaviour a benchmark tunes
		"deadlock_timeout", "max_locks_per_transaction", "max_pred_locks_per_transaction",
		"max_pred_locks_per_relation", "max_pred_locks_per_page", "lock_timeout", "statement_timeout",
		"idle_in_transaction_session_timeout", "default_transaction_isolation", "client_min_messages",
	},
	[]string{ // statistics collection, whose cost a study may measure
		"track_activities", "track_counts", "track_io_timing", "track_wal_io_timing", "track_functions",
		"track_activity_query_size", "stats_fetch_consistency", "compute_query_id", "update_process_title",
	},
)

// ownedSettings are what dbrig's own block of dbrig.conf sets: a study
// that set them would move the server off loopback and its private socket.
var ownedSettings = map[string]string{
	"listen_addresses":          engine.DecidesListening + " (127.0.0.1 only)",
	"port":                      engine.DecidesListening + " (a free port dbrig picks)",
	"unix_socket_directories":   engine.DecidesListening + " (a private 0700 directory)",
	"unix_socket_permissions":   engine.DecidesListening + " (a private 0700 directory)",
	"unix_socket_group":         engine.DecidesListening,
	"bonjour":                   engine.DecidesListening,
	"bonjour_name":              engine.DecidesListening,
	"password_encryption":       engine.DecidesLogins + " (scram-sha-256)",
	"hba_file":                  engine.DecidesLogins + " (scram-sha-256 with dbrig's password)",
	"ident_file":                engine.DecidesLogins,
	"authentication_timeout":    engine.DecidesLogins,
	"db_user_namespace":         engine.DecidesLogins,
	"krb_server_keyfile":        engine.DecidesLogins,
	"krb_caseins_users":         engine.DecidesLogins,
	"scram_iterations":          engine.DecidesLogins,
	"data_directory":            engine.DecidesFiles + " (an instance's data_dir places it)",
	"config_file":               engine.DecidesFiles,
	"external_pid_file":         engine.DecidesFiles,
	"extension_destdir":         engine.DecidesFiles,
	"include":                   engine.DecidesFiles,
	"include_dir":               engine.DecidesFiles,
	"include_if_exists":         engine.DecidesFiles,
	"archive_command":           engine.DecidesCommands,
	"restore_command":           engine.DecidesCommands,
	"archive_cleanup_command":   engine.DecidesCommands,
	"recovery_end_command":      engine.DecidesCommands,
	"ssl_passphrase_command":    engine.DecidesCommands,
	"archive_library":           engine.DecidesLibraries,
	"shared_preload_libraries":  engine.DecidesLibraries,
	"local_preload_libraries":   engine.DecidesLibraries,
	"session_preload_libraries": engine.DecidesLibraries,
	"dynamic_library_path":      engine.DecidesLibraries,
	"jit_provider":              engine.DecidesLibraries,
	"logging_collector":         engine.DecidesLogging + " (the server log dbrig reads when a start fails)",
	"event_source":              engine.DecidesLogging,
	"primary_conninfo":          engine.DecidesReplication,
	"primary_slot_name":         engine.DecidesReplication,
	"synchronous_standby_names": engine.DecidesReplication,
	"promote_trigger_file":      engine.DecidesReplication,
	"archive_mode":              engine.DecidesReplication,
}

// ownerOf says what a setting dbrig owns decides, "" for one it does not.
// Beside ownedSettings, whole families are dbrig's by their names: TLS,
// logging, recovery targets and any file or directory.
func ownerOf(name string) string {
	if d, ok := ownedSettings[name]; ok {
		return d
	}
	switch {
	case strings.HasPrefix(name, "ssl"):
		return engine.DecidesTLS
	case strings.HasPrefix(name, "log_"), strings.HasPrefix(name, "syslog_"):
		return engine.DecidesLogging
	case strings.HasPrefix(name, "recovery_"), strings.HasPrefix(name, "wal_receiver_"):
		return engine.DecidesReplication
	case strings.HasSuffix(name, "_file"), strings.HasSuffix(name, "_directory"),
		strings.HasSuffix(name, "_directories"), strings.HasSuffix(name, "_path"):
		return engine.DecidesFiles
	case strings.HasSuffix(name, "_command"):
		return engine.DecidesCommands
	case strings.HasSuffix(name, "_libraries"), strings.HasSuffix(name, "_library"):
		return engine.DecidesLibraries
	}
	return ""
}

// StudySetting says whether a study may set a setting: PostgreSQL's names
// are case-insensitive; they are written into dbrig.conf as given, so
// nothing else about them is forgiven.
func (e *Engine) StudySetting(name string) error { return studySetting(name) }

func studySetting(name string) error {
	canonical := strings.ToLower(name)
	if studySettings.Allows(canonical) {
		return nil
	}
	return studySettings.Refuse(name, canonical, ownerOf(canonical))
}

// checkFixture is Start's check of the settings dbrig's own code gives a
// server (engine.StartOptions.Fixture): nothing about where the server
// listens, how logins work, which files, libraries and commands it uses:
// TLS, logging and what a study may set, every value one line.
func checkFixture(settings map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		switch owner := ownerOf(strings.ToLower(k)); {
		case owner == engine.DecidesTLS, strings.HasPrefix(owner, engine.DecidesLogging), owner == "":
		default:
			errs = append(errs, fmt.Errorf("setting %q decides %s, which belongs to dbrig", k, owner))
		}
		if err := engine.CheckSettingValue(Name, k, settings[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkStudySettings is Start's and Reconfigure's check: every name a study
// may set, every value free of control characters.
func checkStudySettings(settings map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := settings[k]
		if err := studySetting(k); err != nil {
			errs = append(errs, err)
		}
		if err := engine.CheckSettingValue(Name, k, v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
