// Package rbar is the row-by-row ("RBAR") workload of seed 004: how much
// network latency, link speed and the client's own speed cost a process that
// handles rows one at a time, against set-based and streaming work.
//
// Six experiments, each over N rows of a cross join of a 1,000-row table
// (rbar_objects) with itself three times, the analogue of the seed's cross
// join of sys.objects with MAXDOP 1. Each runs on PostgreSQL or MariaDB, in
// the dialect of the instance's engine (postgres.go, mariadb.go):
//
//   - server-loop: count N rows on the server; one round trip in all.
//     PostgreSQL: count(*) over the cross join LIMIT N, with
//     max_parallel_workers_per_gather = 0 (MAXDOP 1). MariaDB has no
//     parallel query; it would materialize a derived table with a LIMIT
//     into a temporary table before counting it, so the count is the sum of
//     three range-bounded counts over the same cross join that together
//     cover exactly its first N rows.
//   - server-cursor: a stored loop FETCHes the rows one by one from a cursor
//     into a variable; one round trip in all. PostgreSQL: a PL/pgSQL
//     function; MariaDB: a stored procedure (a MariaDB cursor materializes
//     its rows into a temporary table when it is opened: that is its cost).
//   - client-stream: the rows stream to the client in one result set and are
//     discarded as they arrive.
//   - cursor-messages: the seed's "10^7 result sets": a stored cursor loop
//     sends every row to the client as a message of its own, without
//     waiting for the client. PostgreSQL: RAISE NOTICE per row; MariaDB: a
//     procedure that SELECTs each row, so each is a result set of its own
//     (the client walks them with NextResultSet).
//   - client-row-by-row: one round trip per row, so time per row = RTT +
//     server + client. row_by_row = "select": a server-side prepared
//     SELECT of one parameter per row (pgx's extended protocol; MariaDB's
//     binary protocol, COM_STMT_EXECUTE). row_by_row = "fetch": the next row
//     of a position the server keeps between round trips: PostgreSQL's
//     FETCH NEXT from a cursor over the cross join; MariaDB's HANDLER ...
//     READ NEXT over rbar_objects' primary key (go-sql-driver/mysql has no
//     protocol-level cursor fetch, and a stored procedure's cursor cannot
//     outlive its CALL), restarting at READ FIRST every 1,000 rows.
//   - wide-rows: rows of row_bytes (8,000) characters stream to the client;
//     the link's rate and window decide.
//
// Wire bytes: on PostgreSQL the client adds up the protocol messages it
// decodes (DataRow, NoticeResponse); on MariaDB the connection counts the
// bytes it reads from the socket while a statement runs, which is every
// packet of the result, headers included.
//
// Before their one statement, server-loop and server-cursor time round
// trips of one row on their path (ProbeMetric, probe_rt_us): what the path
// costs a row-by-row point beyond its RTT, measured before those points run;
// server-loop times them once more with a busy loop on each CPU
// (ProbeSpinMetric, probe_spin_rt_us), for the points whose CPUs spin.
// On the unix socket and direct TCP, server-loop then samples each other
// experiment in one short statement (SampleRows, SampleMetric): the
// consumer rate of each stream and a cursor's time per row on that path,
// measured before the points of those experiments run there.
//
// The model (model.go) predicts each point from the fastest path of the
// same engine, transport, experiment and client (a server-side point from
// the median of every other path). The rbar-latency study
// (studies/rbarlatency) draws and judges the results, per engine when a
// study sweeps it.
package rbar
