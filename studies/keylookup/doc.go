// Package keylookup is the key-lookup study (key-lookup.toml): with every
// page of the table cached, how much longer SELECT max(dt) takes through a
// secondary index with a lookup per row than by a scan, and whether the
// difference is the pages each path visits, on PostgreSQL and MariaDB. Its
// seed is 002_55a8810b13f65153.txt (Linchi Shea, "Performance Impact:
// Bookmark Lookup is Expensive - Even in Memory"); the workload it runs is
// internal/workload/keylookup, which measures both paths and states the
// page model.
//
// judges.go decides the seed's findings by their ids in the TOML:
// lookup-time, lookup-pages, pages-per-lookup and time-follows-pages, on
// each engine's comparison apart (study.JudgeEach), a reproduced finding
// differing where a page was not cached. report.go adds to the report of
// every keylookup run the seed's row beside each engine's and a chart of
// the ratios.
package keylookup
