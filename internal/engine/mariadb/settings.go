package mariadb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/dbrig/dbrig/internal/engine"
)

// A setting's name is what mariadbd's options are called, in either
// spelling: "innodb_buffer_pool_size" or "innodb-buffer-pool-size", in any
// case (the server itself ignores case). dbrig writes them with "_".
func normalize(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
}

// studySettings are the settings a study may vary on MariaDB. The list
// was made from MariaDB 10.11's options (`mariadbd --verbose --help`),
// group by group: every setting the built-in studies, the load commands'
// study files and dbrig's tests set, and the rest of the groups a
// performance study sweeps (the InnoDB buffer pool, flushing, redo log
// sizes, I/O capacity and threads, page compression, purge, the thread
// pool, the query and table caches, per-session buffers, the optimizer,
// the binary log's cost, locks), plus the same groups' options of later
// versions. Left out on purpose: where the server listens, logins and
// TLS, every file and directory, plugins, logging, replication
// connections (dbrig's; ownerOf says which), and options that change what
// SQL means rather than how fast it runs (sql_mode, lower_case_table_names
// ...). A name may carry my_getopt's prefixes (loose-, and skip-, enable-
// or disable- before an allowed option). Types and ranges are the
// server's own: CheckSettings asks mariadbd's option parser.
var studySettings = engine.NewStudySettings(Name, "MariaDB", "internal/engine/mariadb/settings.go",
	[]string{ // the InnoDB buffer pool
		"innodb_buffer_pool_size", "innodb_buffer_pool_chunk_size", "innodb_buffer_pool_instances",
		"innodb_buffer_pool_load_at_startup", "innodb_buffer_pool_dump_at_shutdown", "innodb_buffer_pool_dump_pct",
		"innodb_old_blocks_pct", "innodb_old_blocks_time", "innodb_lru_scan_depth", "innodb_lru_flush_size",
		"innodb_read_ahead_threshold", "innodb_random_read_ahead", "innodb_change_buffering",
		"innodb_change_buffer_max_size", "innodb_adaptive_hash_index", "innodb_adaptive_hash_index_parts",
		"innodb_numa_interleave",
	},
	[]string{ // InnoDB flushing, durability and the redo log
		"innodb_flush_log_at_trx_commit", "innodb_flush_log_at_timeout", "innodb_flush_method", "innodb_flush_sync",
		"innodb_flush_neighbors", "innodb_flushing_avg_loops", "innodb_max_dirty_pages_pct",
		"innodb_max_dirty_pages_pct_lwm", "innodb_adaptive_flushing", "innodb_adaptive_flushing_lwm",
		"innodb_doublewrite", "innodb_use_atomic_writes", "innodb_log_file_size", "innodb_log_buffer_size",
		"innodb_log_write_ahead_size", "innodb_log_file_buffering", "innodb_log_file_mmap",
		"innodb_log_spin_wait_delay", "innodb_checksum_algorithm",
	},
	[]string{ // InnoDB I/O, threads, pages and purge
		"innodb_io_capacity", "innodb_io_capacity_max", "innodb_read_io_threads", "innodb_write_io_threads",
		"innodb_use_native_aio", "innodb_page_size", "innodb_compression_algorithm", "innodb_compression_level",
		"innodb_compression_default", "innodb_compression_failure_threshold_pct", "innodb_compression_pad_pct_max",
		"innodb_default_row_format", "innodb_file_per_table", "innodb_fill_factor", "innodb_sort_buffer_size",
		"innodb_online_alter_log_max_size", "innodb_autoextend_increment", "innodb_open_files",
		"innodb_purge_threads", "innodb_purge_batch_size", "innodb_max_purge_lag", "innodb_max_purge_lag_delay",
		"innodb_undo_tablespaces", "innodb_undo_log_truncate", "innodb_max_undo_log_size",
		"innodb_spin_wait_delay", "innodb_sync_spin_loops", "innodb_thread_concurrency",
		"innodb_prefix_index_cluster_optimization", "innodb_ft_cache_size", "innodb_ft_total_cache_size",
	},
	[]string{ // InnoDB locks and statistics
		"innodb_lock_wait_timeout", "innodb_deadlock_detect", "innodb_deadlock_report", "innodb_autoinc_lock_mode",
		"innodb_stats_persistent", "innodb_stats_persistent_sample_pages", "innodb_stats_transient_sample_pages",
		"innodb_stats_auto_recalc", "innodb_stats_on_metadata", "innodb_stats_method",
	},
	[]string{ // threads and connections: how many, not where or who
		"max_connections", "max_user_connections", "back_log", "thread_handling", "thread_cache_size",
		"thread_stack", "thread_pool_size", "thread_pool_max_threads", "thread_pool_idle_timeout",
		"thread_pool_oversubscribe", "thread_pool_stall_limit", "thread_pool_priority",
		"thread_pool_prio_kickup_timer", "thread_pool_dedicated_listener", "thread_pool_exact_stats",
		"max_prepared_stmt_count", "max_allowed_packet", "net_buffer_length",
	},
	[]string{ // the query cache, the table caches and files
		"query_cache_type", "query_cache_size", "query_cache_limit", "query_cache_min_res_unit",
		"query_cache_wlock_invalidate", "query_cache_strip_comments", "table_open_cache",
		"table_open_cache_instances", "table_definition_cache", "open_files_limit", "host_cache_size",
		"metadata_locks_cache_size", "metadata_locks_hash_instances",
	},
	[]string{ // per-session memory and temporary tables
		"sort_buffer_size", "join_buffer_size", "join_buffer_space_limit", "join_cache_level", "read_buffer_size",
		"read_rnd_buffer_size", "tmp_table_size", "tmp_memory_table_size", "tmp_disk_table_size",
		"max_heap_table_size", "bulk_insert_buffer_size", "mrr_buffer_size", "max_sort_length",
		"max_length_for_sort_data", "transaction_prealloc_size", "transaction_alloc_block_size",
		"query_prealloc_size", "query_alloc_block_size", "range_alloc_block_size", "large_pages",
		"key_buffer_size", "key_cache_block_size", "key_cache_division_limit", "key_cache_age_threshold",
		"key_cache_segments", "myisam_sort_buffer_size", "aria_pagecache_buffer_size", "aria_sort_buffer_size",
		"aria_group_commit", "aria_group_commit_interval", "aria_checkpoint_interval",
		"default_storage_engine", "default_tmp_storage_engine", "character_set_server", "collation_server",
	},
	[]string{ // the optimizer
		"optimizer_switch", "optimizer_search_depth", "optimizer_prune_level", "optimizer_extra_pruning_depth",
		"optimizer_use_condition_selectivity", "optimizer_max_sel_arg_weight", "optimizer_max_sel_args",
		"optimizer_join_limit_pref_ratio", "optimizer_adjust_secondary_key_costs",
		"optimizer_selectivity_sampling_limit", "eq_range_index_dive_limit", "in_predicate_conversion_threshold",
		"histogram_size", "histogram_type", "use_stat_tables", "max_seeks_for_key", "max_rowid_filter_size",
		"expensive_subquery_limit", "optimizer_disk_read_cost", "optimizer_disk_read_ratio",
		"optimizer_index_block_copy_cost", "optimizer_key_compare_cost", "optimizer_key_copy_cost",
		"optimizer_key_lookup_cost", "optimizer_key_next_find_cost", "optimizer_row_copy_cost",
		"optimizer_row_lookup_cost", "optimizer_row_next_find_cost", "optimizer_rowid_compare_cost",
		"optimizer_rowid_copy_cost", "optimizer_scan_setup_cost", "optimizer_where_cost",
	},
	[]string{ // the binary log's cost (on or off, how often it syncs), not where it goes
		"skip_log_bin", "sync_binlog", "binlog_format", "binlog_row_image", "binlog_cache_size",
		"binlog_stmt_cache_size", "binlog_commit_wait_count", "binlog_commit_wait_usec", "binlog_checksum",
		"binlog_annotate_row_events", "binlog_optimize_thread_scheduling", "sync_frm", "flush", "flush_time",
	},
	[]string{ // locks, transactions and instrumentation a benchmark tunes
		"lock_wait_timeout", "transaction_isolation", "concurrent_insert", "low_priority_updates",
		"max_write_lock_count", "performance_schema", "userstat",
	},
)

// ownedSettings are the options dbrig sets itself and the ones a study
// could use to undo them: where the server listens (127.0.0.1 and a
// private socket only), who it runs as, where its files live, how logins
// work. The text says what each decides, and why dbrig keeps it where
// that helps.
var ownedSettings = map[string]string{
	"port":                      engine.DecidesListening + " (127.0.0.1 at a free port)",
	"bind_address":              engine.DecidesListening + " (127.0.0.1 only)",
	"extra_port":                engine.DecidesListening + " (dbrig keeps the extra port for its monitoring connection)",
	"extra_max_connections":     engine.DecidesListening + " (dbrig keeps the extra port for its monitoring connection)",
	"skip_networking":           engine.DecidesListening + " (127.0.0.1 and a private socket)",
	"socket":                    engine.DecidesListening + " (a socket in a private 0700 directory)",
	"skip_name_resolve":         engine.DecidesLogins + " (dbrig's logins are defined by address)",
	"skip_grant_tables":         engine.DecidesLogins + " (every login needs a password)",
	"init_file":                 engine.DecidesLogins + " (every login needs a password)",
	"init_connect":              engine.DecidesLogins,
	"secure_auth":               engine.DecidesLogins,
	"require_secure_transport":  engine.DecidesTLS,
	"tls_version":               engine.DecidesTLS,
	"user":                      engine.DecidesAccount + " (dbrig's unprivileged account)",
	"chroot":                    engine.DecidesFiles,
	"datadir":                   engine.DecidesFiles + " (an instance's data_dir places the data)",
	"innodb_data_home_dir":      engine.DecidesFiles + " (an instance's data_dir places the data)",
	"innodb_log_group_home_dir": engine.DecidesFiles + " (an instance's wal_dir places the redo log)",
	"tmpdir":                    engine.DecidesFiles,
	"innodb_tmpdir":             engine.DecidesFiles,
	"secure_file_priv":          engine.DecidesFiles,
	"local_infile":              engine.DecidesFiles,
	"basedir":                   "which installation runs (--mariadb-bin chooses it)",
	"pid_file":                  engine.DecidesFiles + " (dbrig tracks the server through its own pid file)",
	"log_error":                 engine.DecidesLogging + " (the server log is dbrig's, shown when a start fails)",
	"log_basename":              engine.DecidesFiles + " (it moves the pid file and logs out of dbrig's directories)",
	"general_log":               engine.DecidesLogging,
	"slow_query_log":            engine.DecidesLogging,
	"bootstrap":                 "how the data directory is made (dbrig makes it)",
	"no_defaults":               "which option files the server reads (none)",
	"defaults_file":             "which option files the server reads (none)",
	"defaults_extra_file":       "which option files the server reads (none)",
	"defaults_group_suffix":     "which option files the server reads (none)",
	"print_defaults":            "what mariadbd does instead of serving",
	"help":                      "what mariadbd does instead of serving",
	"verbose":                   "what mariadbd does instead of serving",
	"version":                   "what mariadbd does instead of serving",
	"server_id":                 engine.DecidesReplication,
	"event_scheduler":           "which SQL the server runs by itself",
}

// ownerOf says what an option dbrig owns decides, in any of its spellings,
// "" for one it does not own. Beside ownedSettings, whole families are
// dbrig's by their names.
func ownerOf(name string) string {
	for _, s := range spellings(name) {
		if d, ok := ownedSettings[s]; ok {
			return d
		}
		switch {
		case strings.HasPrefix(s, "ssl"), strings.HasPrefix(s, "tls_"):
			return engine.DecidesTLS
		case strings.HasPrefix(s, "plugin"), strings.Contains(s, "_plugin"):
			return engine.DecidesLibraries
		case strings.HasPrefix(s, "log_"), strings.HasSuffix(s, "_log_file"), s == "log_output":
			return engine.DecidesLogging
		case strings.HasPrefix(s, "relay_"), strings.HasPrefix(s, "master_"), strings.HasPrefix(s, "slave_"),
			strings.HasPrefix(s, "replicate_"), strings.HasPrefix(s, "rpl_"), strings.HasPrefix(s, "wsrep"),
			strings.HasPrefix(s, "report_"):
			return engine.DecidesReplication
		case strings.HasSuffix(s, "_file"), strings.HasSuffix(s, "_dir"), strings.HasSuffix(s, "_directory"),
			strings.HasSuffix(s, "_path"), strings.HasSuffix(s, "_filename"):
			return engine.DecidesFiles
		}
	}
	return ""
}

// checkFixture is StartInstance's check of the options dbrig's own code
// gives a server (engine.StartOptions.Fixture): anything but where the
// server listens, how logins work and which account and files it runs
// with, every value one line.
func checkFixture(settings map[string]string) (map[string]string, error) {
	norm, errs := normalizeSettings(settings)
	for _, k := range slices.Sorted(maps.Keys(norm)) {
		switch owner := ownerOf(k); {
		case owner == engine.DecidesTLS, owner == engine.DecidesLogging, owner == "":
		default:
			errs = append(errs, fmt.Errorf("option %s decides %s, which belongs to dbrig", k, owner))
		}
		if err := engine.CheckSettingValue(Name, k, norm[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return norm, errors.Join(errs...)
}

// StudySetting says whether a study may set an option, in any spelling.
func (e *Engine) StudySetting(name string) error { return studySetting(name) }

func studySetting(name string) error {
	n := normalize(name)
	// normalize forgives spaces around a name, which mariadbd would not.
	if studyAllows(n) && !strings.ContainsFunc(name, unicode.IsSpace) {
		return nil
	}
	return studySettings.Refuse(name, n, ownerOf(n))
}

// studyAllows reports whether the list has the option, with loose- before
// it, or skip-, enable- or disable- before an option it has
// (skip-innodb-doublewrite is innodb_doublewrite off). maximum- is never
// allowed: it would let a session raise a setting the study did not vary.
func studyAllows(name string) bool {
	name = strings.TrimPrefix(name, "loose_")
	if studySettings.Allows(name) {
		return true
	}
	for _, p := range []string{"skip_", "enable_", "disable_"} {
		if rest, ok := strings.CutPrefix(name, p); ok && studySettings.Allows(rest) {
			return true
		}
	}
	return false
}

// initSettings take effect only when the data directory is made: they are
// passed to mariadb-install-db as well, and a change needs a new instance.
var initSettings = []string{"innodb_page_size", "innodb_data_file_path", "innodb_undo_tablespaces",
	"lower_case_table_names", "innodb_log_file_size"}

// fixedAtInit are the initSettings a restart cannot change.
var fixedAtInit = []string{"innodb_page_size", "innodb_data_file_path", "innodb_undo_tablespaces", "lower_case_table_names"}

// The option prefixes my_getopt understands: loose- (ignore when unknown),
// maximum- (the upper bound SET may use), skip- and disable- (off, or 0)
// and enable- (on). The option parser judges the value they imply
// (--skip-max-connections is clamped to 10, so refused).
var optionPrefixes = []string{"loose_", "maximum_", "skip_", "enable_", "disable_"}

// spellings lists name and the names it stands for once prefixes are taken
// off ("loose_skip_networking" is also "skip_networking" and "networking").
func spellings(name string) []string {
	out := []string{name}
	for _, p := range optionPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" {
			out = append(out, spellings(rest)...)
		}
	}
	return out
}

// catalogue is the set of options one mariadbd knows, as its
// `--verbose --help` lists them.
type catalogue struct {
	names map[string]bool
	// numeric are the options whose value is a number ("--name=#" in the
	// listing).
	numeric map[string]bool
}

var (
	optionLineRE = regexp.MustCompile(`^  (?:-\w, )?--([A-Za-z0-9_-]+)(\[?=#)?`)
	tableLineRE  = regexp.MustCompile(`^(\S+)\s`)
	// optionNumberRE is a number as my_getopt reads one: digits, an optional
	// fraction and exponent (for the options that are doubles), and an
	// optional multiplier suffix K, M, G, T, P or E.
	optionNumberRE = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[kKmMgGtTpPeE]?$`)
)

// parseHelp reads `mariadbd --verbose --help`: the option descriptions
// and the table of variables with their values.
func parseHelp(out []byte) catalogue {
	c := catalogue{names: map[string]bool{}, numeric: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	inTable := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "-------"):
			inTable = true
		case inTable && strings.TrimSpace(line) == "":
			inTable = false
		case inTable:
			if m := tableLineRE.FindStringSubmatch(line); m != nil {
				c.names[normalize(m[1])] = true
			}
		default:
			if m := optionLineRE.FindStringSubmatch(line); m != nil {
				c.names[normalize(m[1])] = true
				if m[2] != "" {
					c.numeric[normalize(m[1])] = true
				}
			}
		}
	}
	return c
}

// known reports whether the server accepts the option name, prefixes
// included.
func (c catalogue) known(name string) bool {
	if c.names[name] {
		return true
	}
	for _, p := range optionPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok && c.known(rest) {
			return true
		}
	}
	return false
}

func (c catalogue) list() []string { return slices.Sorted(maps.Keys(c.names)) }

// badNumber reports whether value is not a number although the option
// takes one. my_getopt reads a value that starts with a letter it takes
// for a multiplier ("maybe", "ten") as 0 without a word, so the option
// parser alone would let the server run with 0 where the study says
// something else.
func (c catalogue) badNumber(name, value string) bool {
	for _, p := range []string{"loose_", "maximum_"} {
		name = strings.TrimPrefix(name, p)
	}
	return c.numeric[name] && value != "" && !optionNumberRE.MatchString(strings.TrimSpace(value))
}

// optionArg is a setting as a mariadbd argument: "--name=value", or
// "--name" alone for an empty value ("skip_log_bin" = "").
func optionArg(name, value string) string {
	if value == "" {
		return "--" + name
	}
	return "--" + name + "=" + value
}

// settingArgs are the settings as mariadbd arguments, in a stable order.
func settingArgs(settings map[string]string) []string {
	var args []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, optionArg(k, settings[k]))
	}
	return args
}

// normalizeSettings spells every name with "_" in lower case; two
// spellings of one name are an error.
func normalizeSettings(settings map[string]string) (map[string]string, []error) {
	out := make(map[string]string, len(settings))
	from := map[string]string{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		n := normalize(k)
		if prev, dup := from[n]; dup {
			errs = append(errs, &engine.SettingError{Engine: Name, Key: k, Value: settings[k],
				Msg: fmt.Sprintf("setting %s is given twice (also as %s)", k, prev), NameRefused: true})
			continue
		}
		from[n] = k
		out[n] = settings[k]
	}
	return out, errs
}

// helpRun runs mariadbd's option parser over args without starting a
// server: `mariadbd --no-defaults ARGS --verbose --help`. It returns the
// option list (stdout) and what the parser refused.
func (e *Engine) helpRun(ctx context.Context, bin Binaries, args []string) (stdout []byte, problems []string, err error) {
	full := []string{"--no-defaults"}
	if bin.BaseDir != "" {
		full = append(full, "--basedir="+bin.BaseDir)
	}
	full = append(full, args...)
	full = append(full, "--verbose", "--help")
	cmd := exec.CommandContext(ctx, bin.Server, full...)
	cmd.Env = append(cmd.Environ(), "LC_ALL=C")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("%s --verbose --help: %w", bin.Server, ctx.Err())
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		return nil, nil, fmt.Errorf("run %s --verbose --help: %w", bin.Server, runErr)
	}
	problems = parserProblems(errOut.String(), bin.Server, runErr != nil)
	if runErr != nil && len(problems) == 0 {
		problems = []string{fmt.Sprintf("mariadbd's option parser refused it (%v)", runErr)}
	}
	return out.Bytes(), problems, nil
}

var (
	logPrefixRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d\s+\d\d?:\d\d:\d\d\s+\d+\s+`)
	// Warnings that mean the server would not run with the value given: a
	// number clamped into range, a value ignored or not recognised.
	refusingWarningRE = regexp.MustCompile(`(?i)adjusted to|invalid|ignoring|unknown|incorrect|recognized|can't|couldn't`)
	// Lines that say nothing about the settings.
	noiseRE = regexp.MustCompile(`max_open_files|Changed limits|^Aborting$|Parsing options for plugin .* failed|Couldn't load plugins from`)
)

// parserProblems picks what mariadbd's option parser refused out of its
// standard error: errors, warnings that mean the value is not used as
// given, and, when it failed, lines without a log tag (a character set it
// does not know). On success such lines are diagnostics ("Warning: Memory
// not freed" after a plugin's help).
func parserProblems(stderr, program string, failed bool) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(logPrefixRE.ReplaceAllString(line, ""))
		if line == "" {
			continue
		}
		refused := failed
		switch {
		case strings.HasPrefix(line, "[ERROR]"):
			line = strings.TrimSpace(strings.TrimPrefix(line, "[ERROR]"))
			refused = true
		case strings.HasPrefix(line, "[Warning]"):
			line = strings.TrimSpace(strings.TrimPrefix(line, "[Warning]"))
			refused = refusingWarningRE.MatchString(line)
		case strings.HasPrefix(line, "[Note]"):
			refused = false
		}
		for _, p := range []string{"Buffered error:", "Buffered warning:", program + ":", "mariadbd:"} {
			line = strings.TrimSpace(strings.TrimPrefix(line, p))
		}
		if refused && !noiseRE.MatchString(line) && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

// catalogue returns the options mariadbd knows, read once.
func (e *Engine) catalogue(ctx context.Context, bin Binaries) (catalogue, error) {
	e.mu.Lock()
	c := e.cat
	e.mu.Unlock()
	if c != nil {
		return *c, nil
	}
	out, _, err := e.helpRun(ctx, bin, nil)
	if err != nil {
		return catalogue{}, err
	}
	read := parseHelp(out)
	if len(read.names) < 100 {
		return catalogue{}, fmt.Errorf("%s --verbose --help listed %d options: cannot read its catalogue", bin.Server, len(read.names))
	}
	e.mu.Lock()
	e.cat = &read
	e.mu.Unlock()
	return read, nil
}

// CheckSettings validates server settings before anything starts: each
// name against the list of what a study may vary (StudySetting) and the
// options `mariadbd --verbose --help` lists (a misspelt name is refused
// with the closest valid one), each value free of control characters, and
// the values through mariadbd's own option parser (the same command with
// the settings as arguments), which refuses malformed numbers, unknown
// enumeration values, character sets and collations, and clamps
// out-of-range numbers (a clamped value is refused: the server would run
// with another value than the study says).
//
// Some values can only be checked by starting a server: a storage engine
// name (default_storage_engine), a compression algorithm whose provider
// plugin is missing, sizes that do not fit in memory. Start reports those
// with the end of the server's log.
//
// The cost is one mariadbd process (about 0.07 s here) for the catalogue,
// once, and one per distinct set of settings, plus one per setting when
// the set is refused (to say which).
func (e *Engine) CheckSettings(ctx context.Context, settings map[string]string) []error {
	if len(settings) == 0 {
		return nil
	}
	bin, err := e.FindBinaries(ctx)
	if err != nil {
		return []error{err}
	}
	norm, errs := normalizeSettings(settings)
	cat, err := e.catalogue(ctx, bin)
	if err != nil {
		return append(errs, err)
	}
	toCheck := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(norm)) {
		v := norm[k]
		if err := studySetting(k); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := engine.CheckSettingValue(Name, k, v); err != nil {
			errs = append(errs, err)
			continue
		}
		if !cat.known(k) {
			errs = append(errs, &engine.SettingError{Engine: Name, Key: k, Value: v,
				Msg:     fmt.Sprintf("unknown MariaDB %s setting %s (not among the options `mariadbd --verbose --help` lists)", bin.Version, k),
				Closest: engine.Closest(k, cat.list()), NameRefused: true})
			continue
		}
		if cat.badNumber(k, v) {
			errs = append(errs, &engine.SettingError{Engine: Name, Key: k, Value: v,
				Msg: fmt.Sprintf("setting %s = %q: want a number (such as 2, 64M or 0.5)", k, v)})
			continue
		}
		toCheck[k] = v
	}
	return append(errs, e.checkValues(ctx, bin, toCheck)...)
}

// checkValues runs the option parser over all settings at once and, when it
// refuses something, over each setting alone to say which.
func (e *Engine) checkValues(ctx context.Context, bin Binaries, settings map[string]string) []error {
	if len(settings) == 0 {
		return nil
	}
	problems, err := e.parse(ctx, bin, settings)
	if err != nil {
		return []error{err}
	}
	if len(problems) == 0 {
		return nil
	}
	var errs []error
	keys := slices.Sorted(maps.Keys(settings))
	for _, k := range keys {
		alone, err := e.parse(ctx, bin, map[string]string{k: settings[k]})
		if err != nil {
			return append(errs, err)
		}
		if len(alone) > 0 {
			errs = append(errs, &engine.SettingError{Engine: Name, Key: k, Value: settings[k],
				Msg: fmt.Sprintf("setting %s = %q: mariadbd refuses it: %s", k, settings[k], strings.Join(alone, "; "))})
		}
	}
	if len(errs) == 0 {
		// Refused together but not alone: a combination.
		k := keys[0]
		errs = append(errs, &engine.SettingError{Engine: Name, Key: k, Value: settings[k],
			Msg: fmt.Sprintf("settings %s: mariadbd refuses them together: %s", strings.Join(keys, ", "), strings.Join(problems, "; "))})
	}
	return errs
}

// parse runs the option parser once, cached per set of arguments.
func (e *Engine) parse(ctx context.Context, bin Binaries, settings map[string]string) ([]string, error) {
	args := settingArgs(settings)
	key := strings.Join(args, "\x00")
	e.mu.Lock()
	p, ok := e.parsed[key]
	e.mu.Unlock()
	if ok {
		return p, nil
	}
	_, p, err := e.helpRun(ctx, bin, args)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.parsed[key] = p
	e.mu.Unlock()
	return p, nil
}
