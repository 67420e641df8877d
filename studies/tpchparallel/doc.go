// Package tpchparallel is the tpch-parallel study (tpch-parallel.toml): how
// much faster the 22 TPC-H queries run, all pages cached, when each may use
// more processes, and which queries scale. Its seed is
// 002_55a8810b13f65153.txt (Linchi Shea, "Large Query Performance and
// Query Parallelism", SQL Server 2005 at TPC-H scale factor 10); the
// workload it runs is internal/workload/tpch, which measures each degree
// and fits Amdahl's law per query (its model).
//
// judges.go decides the seed's findings by their ids in the TOML:
// total-speedup, queries-scale, amdahl-fraction, which-queries-scale and
// slower-at-high-degree. report.go adds to the report of every tpch run
// (the study's, and `dbrig load tpch`'s) the charts of the total, the
// speedups and the serial fractions, and the seed's table beside ours.
// analysis.go groups a run's points into degree sweeps and reads the seed's
// published times by MAXDOP (seedTable), which both read; every serial
// fraction shown is the one the model stored with a sweep's last point.
package tpchparallel
