// Package postgres is PostgreSQL behind dbrig's engine seam: [Engine]
// implements engine.Engine for servers dbrig starts ([Instance]) and for the
// user's own servers ([Target]).
//
// # Servers dbrig starts
//
// [Start] makes each instance in a fresh directory under $TMPDIR, as the
// postgres account (or dbrig's own system account) since PostgreSQL refuses
// root. Its data directory is a copy of a template: the first Start on the
// machine for given binaries runs initdb once, in a 0700 scratch directory it
// removes at once, and keeps the data directory in the template cache
// (engine.TemplateCache, $DBRIG_CACHE_DIR or ~/.cache/dbrig) and in memory
// (engine.DirImage); each copy then
// gets dbrig's own configuration files, whatever the template holds, and a
// random password of its own, given as a SCRAM verifier to postgres --single
// on stdin, so the password never leaves dbrig (template.go). The server
// listens on 127.0.0.1 on a free port and on a unix socket in a 0700
// directory, and accepts scram-sha-256 logins of [SuperUser] only. Settings
// go to dbrig.conf in the order dbrig's own, a test fixture's, the study's; a
// study may set only the performance settings the engine lists (settings.go),
// each checked against the server's own catalogue (`postgres
// --describe-config` of the binaries in use) before anything starts. A
// server runs in a process group of its own with SIGKILL as its parent-death
// signal; Stop tries a fast shutdown, then immediate, then kills the group. [RemoveStale] removes the directories of
// instances whose dbrig was killed, never one whose owner still runs.
//
// # The user's servers
//
// [Engine.Attach] connects to a target with the user's connection string
// ([ParseConnInfo]: a URI or key=value conninfo, its sslmode kept exactly as
// given, its password never printed) and reads its version; a target is never
// reconfigured, restarted or dropped, and dbrig removes only the objects it
// made in it.
//
// # Logins
//
// [ConnInfo] is PostgreSQL's view of an engine.Conn, for pgx, pg_dump and the
// replication protocol; engine.Conn keeps the password private and redacts it
// wherever it is printed.
package postgres
