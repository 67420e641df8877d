package replication

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Defaults of the distribution agent, those of the seed's SQL Server agent.
const (
	// DefaultBufferSize is the size of one command buffer: the most SQL the
	// writer sends to the subscriber in one round trip.
	DefaultBufferSize = 40 * 1000
	// DefaultBuffers is the number of command buffers.
	DefaultBuffers = 2
	// DefaultCommitBatchSize is how many source transactions the agent
	// applies per subscriber transaction.
	DefaultCommitBatchSize = 100
	// DefaultPublication names the publication, its slot and subscription.
	DefaultPublication = "dbrig"
	// DefaultDistributionDB is the distribution database on the
	// publisher's server.
	DefaultDistributionDB = "dbrig_distribution"
	// PipelineAuto asks the agent to size its pipeline from the measured
	// bandwidth-delay product of its subscriber connection.
	PipelineAuto = -1
	// MaxPipeline bounds the writer's pipeline depth.
	MaxPipeline = 4096
	// MinBufferSize and MaxBufferSize bound a command buffer: a few
	// commands, and what the agent may hold in memory per buffer.
	MinBufferSize = 1024
	MaxBufferSize = 256 << 20
	// MaxCommitBatchSize bounds the source transactions applied in one
	// subscriber transaction, which holds its locks until it commits.
	MaxCommitBatchSize = 1_000_000
)

// Schema is the schema dbrig creates in the distribution database and in
// the subscriber's database for its own tables.
const Schema = "dbrig_repl"

// Mode is where the distribution agent runs, which decides which of its two
// connections crosses the WAN.
type Mode int

const (
	// Push: the agent runs at the publisher's site (beside the distribution
	// database); the writer's round trips to the subscriber cross the link.
	Push Mode = iota
	// Pull: the agent runs at the subscriber's site; the reader's stream
	// from the distribution database crosses the link.
	Pull
)

func (m Mode) String() string {
	if m == Pull {
		return "pull"
	}
	return "push"
}

// ParseMode reads "push" or "pull".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "push", "":
		return Push, nil
	case "pull":
		return Pull, nil
	}
	return 0, fmt.Errorf("mode %q: want push or pull", s)
}

// Crossing returns the one of the agent's two connection targets that
// crosses the WAN in this mode: the subscriber for push, the distribution
// database for pull. Put a link proxy in front of its Addr().
func (m Mode) Crossing(distribution, subscriber postgres.ConnInfo) postgres.ConnInfo {
	if m == Pull {
		return distribution
	}
	return subscriber
}

// Targets are the two connections of a distribution agent.
type Targets struct {
	Distribution postgres.ConnInfo // the reader's: the distribution database
	Subscriber   postgres.ConnInfo // the writer's: the subscriber's database
}

// AgentTargets returns the agent's connection targets for the mode when the
// WAN is a proxy listening at via (for example a link.Proxy's Addr()) in
// front of m.Crossing(distribution, subscriber).Addr(). An empty via means
// a direct connection for both.
func (m Mode) AgentTargets(distribution, subscriber postgres.ConnInfo, via string) (Targets, error) {
	t := Targets{Distribution: distribution, Subscriber: subscriber}
	if via == "" {
		return t, nil
	}
	var err error
	if m == Pull {
		t.Distribution, err = distribution.Via(via)
	} else {
		t.Subscriber, err = subscriber.Via(via)
	}
	return t, err
}

// InitMethod is how a subscriber receives the published tables' existing rows.
type InitMethod int

const (
	// InitNone: the subscriber already holds the same rows (or the tables
	// are empty on both sides); only changes are replicated.
	InitNone InitMethod = iota
	// InitSnapshot copies each table (COPY TO STDOUT on the publisher, COPY
	// FROM STDIN on the subscriber) in the slot's exported snapshot.
	InitSnapshot
	// InitBackup dumps the tables with pg_dump -Fc in the slot's exported
	// snapshot and restores the archive with pg_restore.
	InitBackup
)

func (m InitMethod) String() string {
	switch m {
	case InitSnapshot:
		return "snapshot"
	case InitBackup:
		return "backup"
	}
	return "none"
}

// ParseInitMethod reads "none", "snapshot" or "backup".
func ParseInitMethod(s string) (InitMethod, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "none", "":
		return InitNone, nil
	case "snapshot":
		return InitSnapshot, nil
	case "backup":
		return InitBackup, nil
	}
	return 0, fmt.Errorf("init %q: want snapshot, backup or none", s)
}

// Compression is how the log reader stores commands in the distribution
// database.
type Compression int

const (
	// CompressZstd stores each chunk of commands compressed with zstd: less
	// to write on the publisher's server and less to read, which in pull
	// mode crosses the WAN.
	CompressZstd Compression = iota
	// CompressNone stores them as pgoutput sent them, as the seed's
	// distribution database does: what a study of the seed's agents uses.
	CompressNone
)

func (c Compression) String() string {
	if c == CompressNone {
		return "none"
	}
	return "zstd"
}

// ParseCompression reads "zstd" or "none".
func ParseCompression(s string) (Compression, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "zstd", "":
		return CompressZstd, nil
	case "none", "off":
		return CompressNone, nil
	}
	return 0, fmt.Errorf("compression %q: want zstd or none", s)
}

// ParsePipeline reads the writer's pipeline depth: a number of buffers in
// flight, or "auto" (PipelineAuto).
func ParsePipeline(s string) (int, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "auto" {
		return PipelineAuto, nil
	}
	var k int
	if _, err := fmt.Sscanf(s, "%d", &k); err != nil || fmt.Sprint(k) != s || k < 1 || k > MaxPipeline {
		return 0, fmt.Errorf("pipeline %q: want auto or a number of buffers in flight from 1 to %d", s, MaxPipeline)
	}
	return k, nil
}

// nameRE is what a publication name may be: it also names a replication
// slot, which allows lower-case letters, digits and underscores only.
var nameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

func validateName(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s %q: use 1 to 48 lower-case letters, digits and underscores, starting with a letter or underscore", what, name)
	}
	return nil
}

// AgentOptions tune the distribution agent.
type AgentOptions struct {
	// BufferSize is the size of one command buffer in bytes of SQL
	// (default DefaultBufferSize). A command larger than a buffer travels
	// in a buffer of its own.
	BufferSize int
	// Buffers is the number of command buffers (default DefaultBuffers). It
	// is raised to Pipeline+1 when the pipeline is deeper.
	Buffers int
	// CommitBatchSize is the number of source transactions per subscriber
	// transaction (default DefaultCommitBatchSize). A source transaction is
	// never split.
	CommitBatchSize int
	// Pipeline is the number of buffers the writer keeps in flight (1 = the
	// seed's stop-and-wait writer; PipelineAuto = from the measured
	// bandwidth-delay product; 0 = the default, PipelineAuto: it keeps
	// the order of every command and the subscriber busy).
	Pipeline int
	// ReadStreams is how many connections the reader reads the pending
	// chunks through at once (default 1), each a share of them, applied in
	// order all the same: across a WAN each carries a window of its own,
	// as the pull agent's reader pays the window.
	ReadStreams int
}

// MaxReadStreams bounds the reader's connections to the distribution
// database.
const MaxReadStreams = 16

func (o AgentOptions) withDefaults() AgentOptions {
	if o.BufferSize <= 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.Buffers <= 0 {
		o.Buffers = DefaultBuffers
	}
	if o.CommitBatchSize <= 0 {
		o.CommitBatchSize = DefaultCommitBatchSize
	}
	if o.Pipeline == 0 {
		o.Pipeline = PipelineAuto
	}
	if o.ReadStreams <= 0 {
		o.ReadStreams = 1
	}
	return o
}

// Validate reports every problem at once.
func (o AgentOptions) Validate() error {
	var errs []error
	if o.BufferSize < 0 || (o.BufferSize > 0 && o.BufferSize < MinBufferSize) || o.BufferSize > MaxBufferSize {
		errs = append(errs, fmt.Errorf("buffer size %d: want 1 KiB to 256 MiB", o.BufferSize))
	}
	if o.Buffers < 0 || o.Buffers > MaxPipeline+1 {
		errs = append(errs, fmt.Errorf("buffers %d: want 1 to %d", o.Buffers, MaxPipeline+1))
	}
	if o.CommitBatchSize < 0 || o.CommitBatchSize > MaxCommitBatchSize {
		errs = append(errs, fmt.Errorf("commit batch size %d: want 1 to %d (a subscriber transaction holds its locks until it commits)", o.CommitBatchSize, MaxCommitBatchSize))
	}
	if o.Pipeline < PipelineAuto || o.Pipeline > MaxPipeline {
		errs = append(errs, fmt.Errorf("pipeline %d: want auto or 1 to %d", o.Pipeline, MaxPipeline))
	}
	if o.ReadStreams < 0 || o.ReadStreams > MaxReadStreams {
		errs = append(errs, fmt.Errorf("read streams %d: want 1 to %d connections", o.ReadStreams, MaxReadStreams))
	}
	return errors.Join(errs...)
}

// UsageError is a problem with what the caller asked for (names, tables,
// options): nothing was changed. The CLI maps it to exit code 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErr(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ServerError is a server that cannot be used as asked (wal_level,
// privileges, state): nothing was changed. The CLI maps it to exit code 1.
type ServerError struct{ Err error }

func (e *ServerError) Error() string { return e.Err.Error() }
func (e *ServerError) Unwrap() error { return e.Err }

// ApplyError is a command the subscriber refused (a constraint, a full
// disk, a missing column). The agent stops on it, the distribution database
// keeps every command, and a new run resumes from the last committed batch.
type ApplyError struct {
	// FirstCmd and LastCmd bound the commands of the statement that failed.
	FirstCmd, LastCmd int64
	// Statement describes it ("INSERT into public.t, 40 rows").
	Statement string
	// XactLSN is the commit LSN of the source transaction.
	XactLSN LSN
	Err     error
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("apply commands %d-%d (%s, source transaction %s) on the subscriber: %v; "+
		"the distribution database keeps every command: remove the cause and run the agent again",
		e.FirstCmd, e.LastCmd, e.Statement, e.XactLSN, e.Err)
}
func (e *ApplyError) Unwrap() error { return e.Err }

// quoteIdent quotes an identifier for SQL.
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// quoteLiteral quotes a string for SQL (standard_conforming_strings on).
func quoteLiteral(s string) string { return "'" + escapeQuotes(s) + "'" }

// TableName is a schema-qualified table name.
type TableName struct {
	Schema, Name string
}

func (t TableName) String() string {
	if t.Schema == "" || t.Schema == "public" {
		return t.Name
	}
	return t.Schema + "." + t.Name
}

// Quoted is the name for SQL.
func (t TableName) Quoted() string {
	s := t.Schema
	if s == "" {
		s = "public"
	}
	return quoteIdent(s) + "." + quoteIdent(t.Name)
}

// ParseTableName reads "t" (schema public) or "s.t"; quoted parts keep
// their case ("\"Big\".t").
func ParseTableName(s string) (TableName, error) {
	parts, err := splitIdent(strings.TrimSpace(s))
	if err != nil {
		return TableName{}, fmt.Errorf("table %q: %w", s, err)
	}
	switch len(parts) {
	case 1:
		return TableName{Schema: "public", Name: parts[0]}, nil
	case 2:
		return TableName{Schema: parts[0], Name: parts[1]}, nil
	}
	return TableName{}, fmt.Errorf("table %q: want table or schema.table", s)
}

// ParseTableList reads "a,b,s.c".
func ParseTableList(s string) ([]TableName, error) {
	var out []TableName
	var errs []error
	for _, p := range strings.Split(s, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		t, err := ParseTableName(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

func splitIdent(s string) ([]string, error) {
	var parts []string
	for len(s) > 0 {
		var part string
		if s[0] == '"' {
			i := 1
			var b strings.Builder
			for {
				if i >= len(s) {
					return nil, errors.New("unterminated quoted identifier")
				}
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			part, s = b.String(), s[i:]
		} else {
			i := strings.IndexByte(s, '.')
			if i < 0 {
				i = len(s)
			}
			part, s = strings.ToLower(s[:i]), s[i:]
		}
		if part == "" {
			return nil, errors.New("empty name")
		}
		parts = append(parts, part)
		if len(s) > 0 {
			if s[0] != '.' {
				return nil, errors.New("unexpected characters after a quoted name")
			}
			s = s[1:]
			if s == "" {
				return nil, errors.New("empty name after '.'")
			}
		}
	}
	return parts, nil
}
