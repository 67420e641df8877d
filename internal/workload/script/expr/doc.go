// Package expr is pgbench's expression language, as `\set` and `\if` of a
// script use it: its operators, its functions (random and its exponential,
// Gaussian and Zipfian forms, hash, permute, least, greatest, abs, int,
// double, ...) and its integer, double, boolean and null values, with
// pgbench 15's rules for each (integer arithmetic checked for overflow,
// integer division truncating, null in gives null out but for IS).
//
// Parse turns an expression into a Node once, resolving each :variable to
// a slot, so that evaluating it at every transaction (Node.Eval over an
// Env) looks nothing up by name. Rand is PostgreSQL's own generator and the
// hash functions are pgbench's bit for bit: a script run with a seed draws
// the same keys under dbrig as under pgbench with that --random-seed
// (internal/workload/script's tests compare the two on a real server).
// An expression that does not parse, or calls a function pgbench lacks or
// with the wrong arguments, is a SyntaxError at its column, never skipped.
package expr
