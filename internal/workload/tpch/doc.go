// Package tpch is the TPC-H workload of seed 002: the 22 queries run as a
// power test at a parallel degree, every answer checked.
//
// Prepare streams each table from tpchgen-cli (FindGenerator; up to scale
// factor 0.1 one process writes every table to temporary files first, since
// its start costs more than the data) into the database (PostgreSQL: COPY
// FROM STDIN; MariaDB: LOAD DATA LOCAL INFILE from a registered reader),
// adds keys and indexes, analyzes, and runs every query once serially: its
// answer (Answer: rows and a checksum of
// the rows in order, canonical across engines) must equal the golden
// answer of testdata/answers.json at that scale factor, and is stored
// beside the data for the points. Run sets the degree, notes the workers
// each plan asks for, runs the stream `streams` times (each answer checked
// against the serial one) and keeps each query's mean by the seed's rule
// (the first stream and each query's fastest and slowest dropped). Model
// fits Amdahl's law per query over the degrees measured so far; the
// tpch-parallel study's judges and report sections (studies/tpchparallel)
// read the fit stored with the sweep's last point.
//
// The queries and schema are files in queries/ENGINE and schema/, embedded
// in the binary. Its load mode (loadmode.go) makes `dbrig load tpch`, whose flags are the
// parameters.
package tpch
