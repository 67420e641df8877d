// Package pagecompression is the page-compression study of seed 002's
// engine notes ("data compression: impact of data distribution"): the same
// rows clustered on cid and on a filler repeating every 80 rows, each page
// compressed on its own, on PostgreSQL (zstd over its heap pages) and
// MariaDB (its PAGE_COMPRESSED tables).
//
// Its file, page-compression.toml, publishes five findings: cid-order
// (barely compresses), filler-order (~10x), order-decides (the gain of
// filler over cid), distinct-values (distinct values a page decide) and
// all-distinct (no gain without duplicates). judges.go decides each on
// every engine and page size of a run apart and merges them
// ([study.MergeFindings]); report.go sets the seed's ratios beside every
// point's with the models and charts each page's ratio by its distinct
// values, for every run of the pagecompress workload. The workload and its
// model are internal/workload/pagecompress.
package pagecompression
