// Package study turns a study file into measured results and a report: it is
// the one pipeline behind `dbrig run` and every `dbrig load KIND`, and the
// hub the built-in studies, the workloads and the CLI meet at.
//
// # The pipeline
//
// [Run] is the whole of a command's work, in this order:
//
//   - [Parse] (or [LoadFile], [Open]; [ParseLoad] for a load's flags) reads a
//     study file into a [Spec], checking every key, value and point against
//     the registered workload kinds' parameters and the engines' lists of
//     settings a study may set. A parse is a pure function of the file: it
//     runs no server program, so `dbrig report` reads a run anywhere. Errors
//     are [SpecErrors], each naming file, line and key.
//   - [Spec.PlanWith] expands the spec's sweeps, scale and `when` rules into a
//     [Plan] of [Point]s, each a [Combo] of instances, links and workload
//     parameters; --engine and --target are applied here.
//   - [CheckBeforeStart] checks what needs the machine (each setting against
//     the engine's catalogue, [CheckSettings]; the host's CPUs, [CheckHost])
//     before anything starts. Input refused before a start is an
//     [InputError] (commands exit 2).
//   - The [Runner] attaches targets, then for each point without a result
//     brings the topology up (internal/topology keeps, reconfigures or
//     restarts instances), prepares the workload when its data changed,
//     runs it (in a client process of its own when the client is limited:
//     [ClientMain]), and appends the [workload.Result] to results.jsonl with
//     an fsync ([ResultWriter]), with the kind's model figures for the point
//     (workload.Kind.Model, given the point and the results before it).
//     Interrupted points are recorded as such; a resume reruns them.
//   - [LoadRun] reads a run directory back ([RunData]) and [BuildReport]
//     makes the report.Doc: generic tables and charts ([Summarize], [Trim]:
//     repetitions and their spread), each [Builtin]'s judges and report
//     sections, and the findings beside the published figures.
//
// # What plugs in
//
// A workload kind ([workload.Kind], package internal/workload) declares its
// parameters, metrics and model; the study package never imports a
// workload. A built-in study is a [Builtin]: its TOML, the kind it runs, and
// its judges (a [Judge] per finding id: hand it the run and the published
// figure, get a finding) and report sections. Both are registered once in
// main with [NewRegistry]; nothing registers itself.
//
// Judges share helpers here so that none repeats another's logic: [Within],
// [Separated] and [RelativeSpread] compare figures with their spread;
// [MergeFindings], [JudgeEach] and [NotMeasured] combine or stand in for
// findings; [RunData.EngineGroups] splits results by engine.
//
// # Files of a run directory
//
// spec.toml (the study as run), run.json ([RunInfo]: command line, scale,
// options), environment.json ([Environment]: host, engines, targets'
// settings), results.jsonl (one [workload.Result] per line, appended and
// fsynced per point), and the reports (report.html, report.md). A run
// directory is all `dbrig report`, `dbrig compare` and a resume need.
package study
