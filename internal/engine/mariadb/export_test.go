package mariadb

// MarkByTable makes a target mark its databases with a table, as on a
// server without database comments (MySQL), so that way is tested on
// MariaDB too.
func (t *Target) MarkByTable() { t.markByTable = true }
