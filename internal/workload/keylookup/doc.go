// Package keylookup is seed 002's "bookmark lookup is expensive, even in
// memory": SELECT max(dt) over the seed's wide table (widetable) by a full
// scan, or forced through the index on j with a lookup of each row, every
// page cached.
//
// Prepare makes the table and reads it and its indexes into the server's
// cache (pg_prewarm; on MariaDB both queries once). Run checks that the
// engine runs the path asked for (EXPLAIN: a sequential scan or a full
// scan of the clustered index; an index scan on j), runs the query once to
// warm up, once to count the pages it touches (PostgreSQL: EXPLAIN
// (ANALYZE, BUFFERS, TIMING OFF) shared hits and reads; MariaDB:
// Innodb_buffer_pool_read_requests and the handler counters), then times
// it `executions` times and keeps the median. It also measures what one
// lookup costs (lookupDepth), the input of the page-count model (Model):
// pages(lookup) = rows × pages per lookup + index pages. Predict stores a
// point's pages and time before it runs: the layout an earlier point
// measured, and a page visit's cost on the same path's earlier points.
//
// The key-lookup study (studies/keylookup) judges each engine's ratios
// against the seed's and the model's, and sets the seed's row beside each
// engine's.
package keylookup
