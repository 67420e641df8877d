// Package readahead is seed 002's "some data points on read-ahead": a cold
// full scan (SELECT max(dt)) of the seed's wide table (widetable), with
// read-ahead at the device's default and at its least, measured from the
// device's own counters.
//
// Prepare makes a loop device of dbrig's own (blockdev.NewLoop, removed
// through Env.Cleanup when the run ends) and puts the table's files on it
// (a PostgreSQL tablespace; MariaDB's DATA DIRECTORY), so dbrig may set
// the device's read-ahead without touching a device it did not make. Each
// point sets the read-ahead, restarts the server in place (its cache
// empty), evicts the table's files from the operating system's cache and
// checks that none of their pages stayed (mincore), times the scan with
// /proc/diskstats read around it (bytes, reads, their average size and
// queue depth), and then reads the table's file itself, as the engine
// reads it, to measure the device's throughput at that read size: the
// seed's arithmetic gives the bytes over that throughput (Arithmetic, the
// fit Model). On an emulated disk, whose rates its profile gives, Predict
// stores the scan's time before it runs: the throttle's bound on its bytes
// and reads, plus the time a page took beyond it on the setting's earlier
// scans.
//
// PostgreSQL reads through the OS cache, so the device's read-ahead sizes
// its reads; it has no prefetch of its own for a sequential scan. InnoDB
// reads with O_DIRECT past the OS's read-ahead; its own linear read-ahead
// (innodb_read_ahead_threshold, 0 = off) is the engine's prefetch the
// "minimal" setting turns off, as the seed's trace flag 652 turned off SQL
// Server's. Where dbrig may not make a loop device (not root, no loop
// devices) or restart the server (a target), the points are skipped with
// the reason.
package readahead
