package pagecompress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// codecs compress one page at a time, each page on its own as a page
// compressor does: zstd (its default level), S2 (an LZ4-class codec) and
// zlib's deflate at the level MariaDB's page compression uses, with zlib's
// 6 bytes of header and checksum.
type codecs struct {
	zstd  *zstd.Encoder
	level int
	fw    *flate.Writer
	buf   bytes.Buffer
	out   []byte
}

func newCodecs(deflateLevel int) (*codecs, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	c := &codecs{zstd: enc, level: deflateLevel}
	if c.fw, err = flate.NewWriter(&c.buf, deflateLevel); err != nil {
		return nil, err
	}
	return c, nil
}

// sizes are one page's compressed sizes.
type sizes struct{ zstd, s2, deflate int }

func (c *codecs) compress(page []byte) sizes {
	var s sizes
	c.out = c.zstd.EncodeAll(page, c.out[:0])
	s.zstd = len(c.out)
	c.out = s2.Encode(c.out[:cap(c.out)], page)
	s.s2 = len(c.out)
	c.buf.Reset()
	c.fw.Reset(&c.buf)
	c.fw.Write(page)
	c.fw.Close()
	s.deflate = c.buf.Len() + 6
	return s
}

func (c *codecs) close() { c.zstd.Close() }

// pageStat is what the measures keep of one table page.
type pageStat struct {
	rows int
	// used are the bytes the page's rows take (tuples or records, and
	// their slots), without the page's header and free space.
	used int
	// compressed are the page's sizes under each codec.
	compressed sizes
	// distinct are the page's distinct filler values (filled in later).
	distinct int
}

// pgPage reads a PostgreSQL heap page's header: its rows are its line
// pointers; used, the line pointers and the tuples.
func pgPage(b []byte) (pageStat, error) {
	if len(b) < 24 {
		return pageStat{}, fmt.Errorf("a heap page of %d bytes", len(b))
	}
	lower := int(binary.LittleEndian.Uint16(b[12:]))
	upper := int(binary.LittleEndian.Uint16(b[14:]))
	special := int(binary.LittleEndian.Uint16(b[16:]))
	if lower < 24 || upper < lower || special < upper || special > len(b) {
		return pageStat{}, fmt.Errorf("a heap page with pd_lower %d, pd_upper %d, pd_special %d", lower, upper, special)
	}
	return pageStat{rows: (lower - 24) / 4, used: (lower - 24) + (special - upper)}, nil
}

// InnoDB's page format (storage/innobase/include/fil0fil.h, page0page.h):
// the file page header, then an index page's header at 38.
const (
	filPagePrev   = 8
	filPageNext   = 12
	filPageType   = 24
	filPageIndex  = 17855 // FIL_PAGE_INDEX: a B-tree page
	pageHeader    = 38
	pageNDirSlots = pageHeader + 0
	pageHeapTop   = pageHeader + 2
	pageGarbage   = pageHeader + 8
	pageNRecs     = pageHeader + 16
	pageLevel     = pageHeader + 26
	pageIndexID   = pageHeader + 28
	supremumEnd   = 120 // PAGE_NEW_SUPREMUM_END: the records start here
	filNull       = 0xFFFFFFFF
)

// innodbLeaves reads an InnoDB tablespace file, compresses each leaf page
// of the clustered index with every codec, and returns the leaves in key
// order (following each leaf's next-page link from the leftmost), with
// their records and the bytes those take.
func innodbLeaves(path string, pageSize int, indexID uint64, c *codecs) ([]pageStat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type leaf struct {
		next uint32
		st   pageStat
	}
	leaves := map[uint32]leaf{}
	first := uint32(filNull)
	b := make([]byte, pageSize)
	for n := uint32(0); ; n++ {
		if _, err := io.ReadFull(f, b); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("read page %d of %s: %w", n, path, err)
		}
		if binary.BigEndian.Uint16(b[filPageType:]) != filPageIndex || binary.BigEndian.Uint64(b[pageIndexID:]) != indexID ||
			binary.BigEndian.Uint16(b[pageLevel:]) != 0 {
			continue
		}
		st := pageStat{
			rows: int(binary.BigEndian.Uint16(b[pageNRecs:])),
			used: int(binary.BigEndian.Uint16(b[pageHeapTop:])) - supremumEnd - int(binary.BigEndian.Uint16(b[pageGarbage:])) +
				2*int(binary.BigEndian.Uint16(b[pageNDirSlots:])),
			compressed: c.compress(b),
		}
		leaves[n] = leaf{next: binary.BigEndian.Uint32(b[filPageNext:]), st: st}
		if binary.BigEndian.Uint32(b[filPagePrev:]) == filNull {
			first = n
		}
	}
	if len(leaves) == 0 || first == filNull {
		return nil, fmt.Errorf("%s holds no leaf page of index %d", path, indexID)
	}
	var out []pageStat
	for n := first; n != filNull; n = leaves[n].next {
		l, ok := leaves[n]
		if !ok || len(out) > len(leaves) {
			return nil, fmt.Errorf("%s: the leaf chain of index %d breaks at page %d", path, indexID, n)
		}
		out = append(out, l.st)
	}
	if len(out) != len(leaves) {
		return nil, fmt.Errorf("%s: %d leaf pages of index %d, %d on the chain from the first", path, len(leaves), indexID, len(out))
	}
	return out, nil
}
