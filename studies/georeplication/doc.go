// Package georeplication is the geo-replication study
// (geo-replication.toml): how fast transactional replication carries rows
// from Tukwila to Blueridge (77 ms) and Dublin (150 ms) by push, pull and a
// pipelined push, with a 64 KiB and a 16 MiB TCP window, beside
// PostgreSQL's native logical replication, row-by-row remote inserts and a
// subscriber's initialization by snapshot or from a backup. Its seed is
// 000_46c1d11720785280.txt (MSCOM Ops, "Geo-Replication Performance Gains
// with Microsoft SQL Server 2008 Running on Windows Server 2008"); the
// workload it runs is internal/workload/georep, which measures and states
// the model.
//
// judges.go decides the seed's findings by their ids in the TOML: the
// gains of Table 2 (push-char, pull-char, linked-server, push-binary,
// pull-binary), pull-beats-push, backup-fastest and snapshot. report.go
// adds to the report of every georep run Table 2 beside dbrig's figures, a
// pipelined push and native replication beyond the seed, every scenario
// against its model, the times chart and the seed's Figures 6 and 7.
// analysis.go groups a run's combinations by scenario, payload, rows, WAN
// and window, which both read.
package georeplication
