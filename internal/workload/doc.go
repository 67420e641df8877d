// Package workload is the plug-in API of dbrig's workloads: what a workload
// declares ([Kind]: its parameters with their bounds, its metrics, its
// model), what it is given for one point ([Env]: parameters, logins through
// the point's links, a logger), what it returns ([Measurement]) and the
// record of a point the runner keeps ([Result]), which models read.
//
// A workload generates load and measures; it never starts servers (the
// topology does), never knows the studies that use it and never draws a
// report: the built-in studies under studies/ judge its results and add
// report sections (study.Builtin). Each workload lives in a package of its
// own below this one and is registered in studies.Workloads() (studies/studies.go).
// docs/workloads.md is the recipe for adding one.
package workload
