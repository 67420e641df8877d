// Package tenants is the many-small-databases workload of seed 003 (server
// consolidation): a hosting provider's customers, one small ledger database
// each, one connection each with 18 ms of think time, every transaction a
// call of one of the database's own server-side functions.
//
// # The databases
//
// Each database holds a customer's ledger: accounts (1,000), a journal and
// invoices sized to the parameter size (the seed's 30 MB; journal rows 80 %
// of it, invoices 20 %, at the bytes per row schema.go measured), and
// `functions` server-side functions (default 200): PL/pgSQL functions on
// PostgreSQL, stored procedures on MariaDB. They come in six families (a
// balance, a statement, open invoices; a journal entry, a new invoice, a
// payment), each function of a family with its own constants, so no two
// share a statement and each is its own plan, as the seed's 200 procedures
// per database were.
//
// The `databases` are spread evenly over the instances of the set the
// parameter `set` names (an [[instance]] with count = N). Prepare makes
// each instance hold exactly its share, named <database>_t0001 ...: on a
// PostgreSQL server dbrig started, the workload's own database is built
// once and every tenant is a copy of it (CREATE DATABASE ... TEMPLATE ...
// STRATEGY = FILE_COPY, `parallel` at once); on MariaDB, which has no
// template, and on a target, each database is built in a session of its
// own, `parallel` at once. Databases that already hold the same ledger
// (PostgreSQL: the template's signature in the database's comment;
// otherwise a table, tenants_meta) are kept and the surplus dropped, so a
// sweep of the count adds or drops only the difference. Prepare reports
// progress per database and runs before every point (a set that shrank
// keeps its first instances' larger shares otherwise).
//
// # A point
//
// One connection per database (the load layer's closed loop: one virtual
// user each, think time `think`), each transaction a family picked by
// weight (65 % reads, 35 % writes) and the family's next function, round
// robin from a random start, through the engine's session (engine.Session:
// the workload names no driver). PostgreSQL's calls are SELECT fn($1, ...)
// in one round trip with no prepared statement of the client's (the
// session's unnamed statement), so a backend's memory is its functions';
// MariaDB's are CALL proc(...) with the arguments written into the text
// (one round trip, no server-side statement per function and connection).
// A connection the server closed is opened anew at the next call. With
// `prime` every connection first calls every function twice (PostgreSQL: in
// a transaction it rolls back), so every backend holds every plan when the
// clock starts, as after hours of service; the two passes are timed apart
// (first_call_ms, later_call_ms), their difference being what compiling a
// function costs, which the seed's recompilations paid again.
//
// The load layer counts transactions per type, errors by class and the
// response-time distributions (kept whole, "response" and per family); each
// connection counts its own, for the TPM of each database. A sampler reads,
// at the end of the warm-up and a second before the end, the servers' CPU
// and storage I/O from /proc (package procstat), dbrig's own CPU, the
// host's, and the engine's counters (log flushes, buffer hits; MariaDB's
// table definitions opened); then every instance's memory, connections
// still open: the PSS and private memory of all its processes, and a capped
// instance's cgroup count. As each connection closes it reads its own
// memory: pg_backend_memory_contexts in all and the contexts that hold
// compiled functions and plans (PL/pgSQL function, CachedPlan*, SPI Plan),
// where the login may read the view, and its backend's RssAnon; MariaDB's
// MEMORY_USED. Settings the judges need (buffer size, wal_level,
// synchronous_commit; MariaDB's buffer pool, binary log and flush setting)
// are read back from the server, not taken from the study.
//
// # Model and findings
//
// The model (model.go) is the closed loop capped by the CPU:
// TPM = min(N × 60 / (R0 + Z), 60 × C / D): the fit. Before each point
// runs, its TPM and response are predicted together (predict.go): the same
// closed loop with the CPU's queue, R = S / (1 − U) and X = N / (Z + L + R)
// solved as one state, S the nearest earlier point's response with its
// queue removed, a write's flush wait counted only where commits wait for
// a disk. The consolidation study
// (studies/consolidation) judges the seed's findings from its
// experiments, which the sweep variable "experiment" names (databases,
// instances, affinity, memory, wal, durability), and draws each experiment
// with the model's line.
package tenants
