package postgres

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// The template is made by initdb running as the server account, which
// can write into its scratch directory until dbrig has read it: a file it
// planted there would reach every later copy of the cached template. So
// nothing in the template may change how a copy runs or who logs in. The
// configuration files the server reads at login (pg_hba.conf,
// pg_ident.conf, postgresql.auto.conf) are dbrig's own in every copy
// (copyTemplate); postgresql.conf is rebuilt from the settings initdb
// writes, and a template holding any other setting, or a top-level entry
// initdb does not make (standby.signal, recovery.signal, backup_label,
// tablespace_map, ...), is refused: made again when read from the cache,
// an error when just made.

// initdbSettings are the settings initdb (PostgreSQL 15) writes into
// postgresql.conf, from the limits and locale it probes.
var initdbSettings = map[string]bool{
	"max_connections": true, "shared_buffers": true, "dynamic_shared_memory_type": true,
	"min_wal_size": true, "max_wal_size": true,
	"lc_messages": true, "lc_monetary": true, "lc_numeric": true, "lc_time": true,
	"datestyle": true, "timezone": true, "log_timezone": true,
	"default_text_search_config": true,
}

// initdbTopLevel are the entries initdb makes at the top of a data
// directory.
var initdbTopLevel = map[string]bool{
	"PG_VERSION": true, "base": true, "global": true, "pg_commit_ts": true, "pg_dynshmem": true,
	"pg_hba.conf": true, "pg_ident.conf": true, "pg_logical": true, "pg_multixact": true,
	"pg_notify": true, "pg_replslot": true, "pg_serial": true, "pg_snapshots": true,
	"pg_stat": true, "pg_stat_tmp": true, "pg_subtrans": true, "pg_tblspc": true,
	"pg_twophase": true, "pg_wal": true, "pg_xact": true,
	"postgresql.auto.conf": true, "postgresql.conf": true,
}

// initdbEmptyDirs are directories initdb leaves empty whose entries would
// change what a copy's server does (a tablespace, a replication slot).
var initdbEmptyDirs = []string{"pg_tblspc", "pg_replslot"}

// confLine is a setting line as initdb writes it: a name, a value (a
// number with its unit, a word, or a quoted string without escapes) and
// perhaps a comment.
var confLine = regexp.MustCompile(`^([a-z_]+)\s*=\s*('[^'\\]*'|[A-Za-z0-9._+-]+)\s*(#.*)?$`)

// checkTemplate refuses a template holding what initdb does not make,
// and returns the postgresql.conf every copy gets: initdb's settings,
// rebuilt one per line, then dbrig's include.
func checkTemplate(img *engine.DirImage) (conf []byte, err error) {
	for _, name := range img.TopLevel() {
		if !initdbTopLevel[name] {
			return nil, fmt.Errorf("the data directory template holds %s, which initdb does not make", name)
		}
	}
	for _, dir := range initdbEmptyDirs {
		if img.Has(dir + "/*") {
			return nil, fmt.Errorf("the data directory template's %s is not empty", dir)
		}
	}
	initdbConf, ok := img.File("postgresql.conf")
	if !ok {
		return nil, fmt.Errorf("the data directory template holds no postgresql.conf")
	}
	return copyConf(initdbConf)
}

// copyConf is the postgresql.conf of a copy, from the template's:
// initdb's settings only, or an error naming the first line that is not
// one.
func copyConf(initdbConf []byte) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# initdb's settings, kept by dbrig\n")
	for n, line := range strings.Split(string(initdbConf), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := confLine.FindStringSubmatch(line)
		if m == nil || !initdbSettings[strings.ToLower(m[1])] {
			return nil, fmt.Errorf("the data directory template's postgresql.conf, line %d, is not a setting initdb writes: %.60q", n+1, line)
		}
		fmt.Fprintf(&b, "%s = %s\n", m[1], m[2])
	}
	b.WriteString("include 'dbrig.conf'\n")
	return b.Bytes(), nil
}
