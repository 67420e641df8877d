// Package consolidation is the consolidation study of seed 003 (SQL Server
// 2000 server consolidation): many small databases, one connection each,
// on one instance or several, pinned or not, with the buffers, the log and
// durability set as the seed's experiments did, on the tenants workload
// (internal/workload/tenants, which owns the closed-loop model).
//
// Its file, consolidation.toml, names six experiments by the sweep
// variable "experiment" and publishes the seed's findings: instances-scale,
// per-database-falls, memory-floor, cpu-affinity, log-apart,
// recovery-model and plan-cache (dedicated is not measured: the machine is
// shared). analysis.go reads each experiment's points and compares them
// against their own noise and other processes' load; judges.go decides
// each finding per engine and merges the engines' findings (plancache.go
// the plan cache's, against what each engine keeps instead); report.go
// draws each experiment with the model's line, the memory the functions
// take, every point's throughput and resources, the baseline measured
// again and what two cores cannot show, for every run of the workload.
package consolidation
