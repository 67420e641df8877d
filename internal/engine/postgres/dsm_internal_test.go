package postgres

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// control makes a control segment's bytes: magic, maxitems, and the items
// as handle and refcnt pairs.
func control(magic uint32, maxItems uint32, items ...[2]uint32) []byte {
	b := make([]byte, dsmItemsOffset+max(int(maxItems), len(items))*dsmItemSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], magic)
	le.PutUint32(b[4:], uint32(len(items)))
	le.PutUint32(b[8:], maxItems)
	for k, it := range items {
		le.PutUint32(b[dsmItemsOffset+k*dsmItemSize:], it[0])
		le.PutUint32(b[dsmItemsOffset+k*dsmItemSize+4:], it[1])
	}
	return b
}

// TestReadControl: the segments in use with files of their own are
// listed; free slots and the main region's are not; anything that is not
// a control segment of the expected owner is refused.
func TestReadControl(t *testing.T) {
	t.Parallel()
	uid := int64(os.Getuid())
	for _, c := range []struct {
		name    string
		data    []byte
		uid     int64
		want    []uint32
		wantErr string
	}{
		{"in use", control(dsmControlMagic, 4, [2]uint32{100, 2}, [2]uint32{202, 1}), uid, []uint32{100, 202}, ""},
		{"free slot and main region", control(dsmControlMagic, 4, [2]uint32{100, 0}, [2]uint32{7, 2}, [2]uint32{8, 2}), uid, []uint32{8}, ""},
		{"empty", control(dsmControlMagic, 4), uid, []uint32{}, ""},
		{"any owner", control(dsmControlMagic, 1, [2]uint32{4, 2}), -1, []uint32{4}, ""},
		{"another magic", control(0x12345678, 4, [2]uint32{100, 2}), uid, nil, "no dynamic shared memory control segment"},
		{"more items than room", control(dsmControlMagic, 1, [2]uint32{100, 2}, [2]uint32{102, 2}), uid, nil, "no dynamic shared memory control segment"},
		{"cut short", control(dsmControlMagic, 4, [2]uint32{100, 2})[:dsmItemsOffset+8], uid, nil, "EOF"},
		{"another owner", control(dsmControlMagic, 1, [2]uint32{4, 2}), uid + 1, nil, "left alone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "PostgreSQL.1")
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readControl(path, c.uid)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("readControl = %v, %v; want an error with %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("readControl = %v, %v; want %v", got, err, c.want)
			}
		})
	}
	if got, err := readControl(filepath.Join(t.TempDir(), "PostgreSQL.2"), uid); got != nil || err != nil {
		t.Errorf("a segment already gone: %v, %v; want nothing and no error", got, err)
	}
	link := filepath.Join(t.TempDir(), "PostgreSQL.3")
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	if _, err := readControl(link, -1); err == nil {
		t.Error("a link was followed")
	}
}
