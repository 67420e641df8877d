package georep

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/replication"
)

// The rows Predict compresses are the archive's: each payload's rows as
// the server makes them (Payload.expr) and COPY writes them out, which is
// what pg_dump --compress=0 puts in the archive.
func TestCopyLineIsTheServersCopyText(t *testing.T) {
	t.Parallel()
	inst, db := sharedPub.Database(t) // a database of its own: its tables are its alone
	ctx := testCtx(t, time.Minute)
	c, err := pgxConnect(ctx, inst.Conn(db), "copy text test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	const rows = 40
	for _, p := range []Payload{PayloadChar1K, PayloadBytes1K, PayloadBytes15K, PayloadHex1K} {
		table := replication.TableName{Schema: "public", Name: "rows_" + strings.NewReplacer("-", "_", ".", "_").Replace(p.String())}
		if err := PrepareTable(ctx, inst.Conn(db), inst.Conn(db), table, p, true); err != nil {
			t.Fatal(err)
		}
		if _, err := InsertRows(ctx, inst.Conn(db), table, p, 1, rows, rows); err != nil {
			t.Fatal(err)
		}
		var server bytes.Buffer
		if _, err := c.PgConn().CopyTo(ctx, &server, "COPY "+table.Quoted()+" TO STDOUT"); err != nil {
			t.Fatal(err)
		}
		var here strings.Builder
		for g := int64(1); g <= rows; g++ {
			here.WriteString(p.copyLine(g))
		}
		if server.String() != here.String() {
			t.Errorf("%s: the server's COPY text differs from copyLine's:\nserver %.300q\nhere   %.300q", p, server.String(), here.String())
		}
	}
}

// The shipper's zstd takes the digest a row repeats once: a row of any
// payload crosses the link in tens of bytes, not its kilobyte.
func TestShippedBytesPerRowIsTheCompressedArchive(t *testing.T) {
	t.Parallel()
	for _, p := range []Payload{PayloadChar1K, PayloadBytes1K, PayloadBytes15K} {
		if got, err := shippedBytesPerRow(p, archiveSampleRows); err != nil || !(got > 16 && got < 100) {
			t.Errorf("%s: %.1f bytes a row compressed (%v), want tens (the row's digest and id)", p, got, err)
		}
	}
	if got, err := shippedBytesPerRow(PayloadChar1K, 0); got != 0 || err != nil {
		t.Errorf("no rows: %v bytes a row (%v)", got, err)
	}
}
