// Package readahead is the read-ahead study (read-ahead.toml): how much
// longer a cold full scan takes when nothing reads ahead of it, and whether
// that is the size of its reads, bytes over the device's throughput at that
// read size, on PostgreSQL and MariaDB. Its seed is 002_55a8810b13f65153.txt
// (Linchi Shea, "Performance Impact: Some Data Points on Read-Ahead"); the
// workload it runs is internal/workload/readahead, which scans on a loop
// device of dbrig's own and states the model.
//
// judges.go decides the seed's findings by their ids in the TOML:
// scan-time, read-size, throughput and model, on each engine's comparison
// apart (study.JudgeEach), a reproduced finding differing where a scan was
// not cold. report.go adds to the report of every read-ahead run the seed's
// scans beside each engine's and a chart of the scan times with the model.
package readahead
