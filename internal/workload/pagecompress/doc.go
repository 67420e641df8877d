// Package pagecompress is seed 002's "data compression: impact of data
// distribution": the same rows (cid, and a CHAR(100) filler repeating with
// period 80) stored clustered on cid and on filler compress very
// differently when each page is compressed on its own.
//
// Prepare makes both orders (PostgreSQL: CLUSTER; MariaDB: the primary
// key, with a PAGE_COMPRESSED copy of each). Run reads the real pages of
// one order, compresses each on its own with zstd, S2 and deflate
// (klauspost/compress), and counts each page's rows, the bytes they take
// and their distinct fillers: on PostgreSQL the heap's pages through
// pageinspect's get_raw_page, the rows by their addresses; on MariaDB the
// clustered index's leaf pages from the table's file in key order, the rows
// in key order. On MariaDB it also reads the engine's own result, both
// copies' allocated sizes (INNODB_SYS_TABLESPACES).
//
// The model is distinct values per page (model.go): a page dictionary's
// ratio from D, R and the row's and value's bytes, a line in D fitted over
// the points for zstd, and for MariaDB the pages' deflate sizes in whole
// file system blocks. Predict (predict.go) makes the same figures before
// the point runs: D from the data's order and period, the layout and
// deflate's ratio from the points before. The page-compression study's
// judges and report sections (studies/pagecompression) read the study's
// measure: zstd per page on PostgreSQL, the engine's own on MariaDB.
package pagecompress
