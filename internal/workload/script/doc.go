// Package script runs pgbench-compatible scripts as a load: the engine of
// `dbrig load script FILE[@WEIGHT] ...` and of a study's workload kind
// "script" ([Kind]). pgbench 15's documentation is the contract; what dbrig
// does not run is refused before anything starts, with the file, the line
// and what to write instead, never skipped.
//
// # The language
//
// A script is SQL commands, each ended by a semicolon and free to span
// lines, and meta commands, each a backslash word to the end of its line
// (a backslash before the newline continues it). Quotes ('...', E'...',
// "...", $tag$...$tag$; on MariaDB also backquotes and backslash escapes),
// comments and parentheses hide semicolons; a meta command ends an SQL
// command that has none; \; joins statements into one command and \: is a
// colon. :name puts a variable into SQL: its text under the simple
// protocol, a parameter ($1, or ? on MariaDB) under the others, one per
// use, fixed when the script is read ([Parse]), so that a client keeps its
// variables in a slice indexed by slots and a statement is prepared once.
//
// The meta commands are \set NAME EXPRESSION, \sleep N [us|ms|s] (or
// \sleep :var), \gset [PREFIX] and \aset [PREFIX] (which end a query and
// keep its last row in variables named after its columns), \if, \elif,
// \else and \endif, and \startpipeline and \endpipeline. Expressions are
// pgbench's (package expr): its operators and precedences, integer
// overflow as an error, NULL, booleans, CASE, abs, debug, double, exp,
// greatest, hash, hash_fnv1a, hash_murmur2, int, least, ln, mod, permute,
// pi, pow, random, random_exponential, random_gaussian, random_zipfian and
// sqrt. Every client has pgbench's variables (client_id, scale,
// random_seed, default_seed, unless define gives them) and a generator of
// its own: under the same random_seed, client n draws exactly what pgbench
// 15's client n draws, and hash and permute give pgbench's values
// (TestExpressionsAgreeWithPgbench checks every function against pgbench
// itself). Several files run together, each one transaction type of the
// load chosen by its @WEIGHT, as pgbench -f FILE@W; the built-ins
// tpcb-like, simple-update and select-only are pgbench's word for word,
// and [Init] makes their tables at a scale (pgbench -i).
//
// # What is refused, and why
//
//   - \shell and \setshell: dbrig does not run shell commands from a
//     script; compute the value with \set, or read it with \gset.
//   - \syncpipeline: pgbench 17's; end the pipeline and start another.
//   - psql's commands (\copy, \gexec, \crosstabview, \watch, \i, \g,
//     \echo) and COPY FROM STDIN or TO STDOUT, which need a data stream a
//     script has not.
//   - What pgbench aborts a client for when it meets it: a pipeline under
//     the simple protocol, nested or left open, holding \gset or \aset, or
//     crossing an \if's branches; \gset not after a query; a malformed
//     \if structure (pgbench's own messages).
//   - A pipeline on MariaDB, whose protocol answers each statement before
//     it reads the next ([Program.CheckEngine]).
//
// # Protocols and engines
//
// On PostgreSQL, through pgconn, as pgbench through libpq: "simple" sends
// the text with the variables in it, "extended" parses, binds and executes
// each time, "prepared" prepares every statement once per connection
// before the run's clock starts and then binds and executes. Parameters
// and rows travel as text; rows are read and dropped unless kept. Pipelines
// send every statement of \startpipeline ... \endpipeline and wait once.
// On MariaDB, through go-sql-driver/mysql's connection: "simple" sends
// the text (COM_QUERY); "extended" and "prepared" run server-side
// prepared statements with binary parameters (MariaDB has no unnamed
// statement to parse each time), and a statement MariaDB will not prepare
// goes as text. pgbench's END is COMMIT there, since MariaDB has no END.
//
// # Errors and retries
//
// A serialization failure (SQLSTATE 40001, MariaDB 1020) or a deadlock
// (40P01, MariaDB 1213) rolls the transaction back and runs its script
// again from the variables and random state its first try started from, up
// to max_tries (pgbench --max-tries; 0 until the run ends). As pgbench 15
// counts: a transaction that fails its last try is a failed one (in the
// load's errors, by class), "retried" counts the transactions tried more
// than once, succeeded or not, "retries" the tries after the first, each
// also at the command that failed, and a retried transaction's latency
// covers all its tries. Any other error fails the transaction, counted by
// class, and rolls back what it left open; unlike pgbench, the client goes
// on, as every dbrig load's users do. A script that ends inside a
// transaction block fails (PostgreSQL; MariaDB's driver does not say).
//
// # Measured
//
// Besides the load layer's figures (throughput, latency percentiles from
// HDR histograms, errors by class, per script), each SQL command's latency
// (pgbench -r) in an HDR histogram of its own, with its failures and
// retries; and per transaction of each script the round trips (the turns
// of the conversation on the wire, counted by the connection: a write after
// a read; one per statement, one per pipeline),
// the bytes each way on the wire, and where its time went: waiting for the
// server, asleep in \sleep, or in the client. A [Report] prints them in
// pgbench's words.
//
// Spread over load agents ([Live].Spread, `dbrig load script --agents`),
// each agent builds the same program from the texts the run read
// ([AgentParams], [AgentWorkload]) and sends its clients' figures with its
// result as an agent.Extra; the coordinator reads them back merged: counts
// summed, each command's histogram merged, so its percentiles are those of
// all the agents' samples.
//
// # Where dbrig differs from pgbench, on purpose
//
//   - Variables are not replaced inside quoted strings and comments
//     (pgbench replaces :name anywhere, so that '10:30' depends on the
//     protocol). A variable no command has set is an error under every
//     protocol (pgbench sends its name as text, or NULL).
//   - NULL goes as SQL NULL under the extended protocols (pgbench sends
//     the text NULL); a boolean goes to MariaDB as 1 or 0.
//   - debug() returns its argument and prints nothing: a load prints no
//     line per transaction.
//   - Statements are prepared before the clock starts (pgbench prepares
//     each in the first transaction that runs it); one that cannot be
//     prepared yet, because the script makes its table, is prepared when
//     it first runs.
package script
