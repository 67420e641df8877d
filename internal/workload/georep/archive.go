package georep

import (
	"crypto/md5"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
)

// archiveSampleRows is how many of a backup's rows Predict compresses to
// learn its archive's bytes a row: the payloads repeat within a row, not
// across rows, so a thousand rows say what twenty thousand compress to.
const archiveSampleRows = 1000

// copyLine is row g of the payload as pg_dump's archive holds it (COPY's
// text format, --compress=0): the same text that Payload.expr makes on the
// server, so that compressing it here is compressing the archive.
func (p Payload) copyLine(g int64) string {
	id := strconv.FormatInt(g, 10)
	sum := md5.Sum([]byte(id))
	digest := hex.EncodeToString(sum[:])
	var payload string
	switch p {
	case PayloadBytes1K, PayloadBytes15K:
		// bytea's hex output, its backslash doubled by COPY.
		payload = `\\x` + strings.Repeat(digest, p.RowBytes()/md5.Size)
	case PayloadHex1K:
		var b strings.Builder
		for i := 1; i <= 32; i++ {
			s := md5.Sum([]byte(id + "." + strconv.Itoa(i)))
			b.WriteString(hex.EncodeToString(s[:]))
		}
		payload = b.String()[:p.RowBytes()]
	default: // rpad(g || ':', 1000, md5(g))
		prefix := id + ":"
		payload = prefix + strings.Repeat(digest, p.RowBytes()/len(digest)+1)[:p.RowBytes()-len(prefix)]
	}
	return id + "\t" + payload + "\n"
}

// shippedBytesPerRow is what a row of the payload's archive takes once the
// shipper has compressed it (newShipperEncoder, as compressTo), from the
// first rows of the table (at most archiveSampleRows).
func shippedBytesPerRow(p Payload, rows int64) (float64, error) {
	n := min(rows, archiveSampleRows)
	if n <= 0 {
		return 0, nil
	}
	var cw counter
	cw.w = io.Discard
	zw, err := newShipperEncoder(&cw)
	if err != nil {
		return 0, err
	}
	for g := int64(1); g <= n; g++ {
		if _, err := io.WriteString(zw, p.copyLine(g)); err != nil {
			return 0, err
		}
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	return float64(cw.n) / float64(n), nil
}
