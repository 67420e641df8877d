package engine

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// A template file is a tar archive (tar tvf lists it): first "key", the
// key it was made for as JSON; then the tree, each directory and regular
// file under "tree/", a file's zero tail left out and its whole size in a
// PAX record; last "end", without which the file is not whole, holding a
// CRC-32C of the key and of every entry's path, mode, size and bytes
// (contentSum): a template damaged on disk where tar sees nothing wrong
// (a bit flipped in a file's bytes) is made again, not copied.
const (
	tmplKeyName  = "key"
	tmplTreeDir  = "tree/"
	tmplEndName  = "end"
	tmplSizePAX  = "DBRIG.size"
	maxTmplEntry = 1 << 30 // a stored file's bytes: a fresh data directory's are a few MB
	maxTmplSize  = 1 << 40 // a file's whole size, zero tail included
)

// contentSum is the CRC-32C a template file's end holds.
type contentSum struct{ h hash.Hash32 }

func newContentSum(key []byte) contentSum {
	s := contentSum{crc32.New(crc32.MakeTable(crc32.Castagnoli))}
	s.h.Write(key)
	return s
}

func (s contentSum) add(e imageEntry) {
	fmt.Fprintf(s.h, "\x00%s\x00%o\x00%d\x00%d\x00", e.rel, uint32(e.mode), e.size, len(e.data))
	s.h.Write(e.data)
}

func (s contentSum) end() []byte { return fmt.Appendf(nil, "crc32c=%08x\n", s.h.Sum32()) }

func writeTemplateFile(w io.Writer, rec keyRecord, img *DirImage) error {
	tw := tar.NewWriter(w)
	key, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := writeTarFile(tw, &tar.Header{Name: tmplKeyName}, key); err != nil {
		return err
	}
	sum := newContentSum(key)
	for _, e := range img.entries {
		sum.add(e)
		hdr := &tar.Header{Name: tmplTreeDir + e.rel, Mode: int64(e.mode.Perm())}
		if e.mode.IsDir() {
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		if e.size > int64(len(e.data)) {
			hdr.PAXRecords = map[string]string{tmplSizePAX: strconv.FormatInt(e.size, 10)}
		}
		if err := writeTarFile(tw, hdr, e.data); err != nil {
			return err
		}
	}
	if err := writeTarFile(tw, &tar.Header{Name: tmplEndName}, sum.end()); err != nil {
		return err
	}
	return tw.Close()
}

func writeTarFile(tw *tar.Writer, hdr *tar.Header, data []byte) error {
	hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
	if hdr.Mode == 0 {
		hdr.Mode = 0o600
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// readTemplateFile reads a template file, or only its key when keyOnly.
// It is dbrig's own file in dbrig's own directory, yet read as if it were
// not: only directories and regular files, each below the tree and below
// a directory before it, with permission bits only, are taken, and a file
// without its end is refused, so a damaged template is made again rather
// than copied.
func readTemplateFile(r io.Reader, keyOnly bool) (*DirImage, keyRecord, error) {
	tr := tar.NewReader(r)
	var rec keyRecord
	hdr, err := tr.Next()
	if err == nil && (hdr.Name != tmplKeyName || hdr.Typeflag != tar.TypeReg || hdr.Size > 1<<20) {
		err = errors.New("it does not begin with its key")
	}
	var key []byte
	if err == nil {
		key, err = io.ReadAll(tr)
	}
	if err == nil {
		err = json.Unmarshal(key, &rec)
	}
	if err != nil || keyOnly {
		return nil, rec, templateFileErr(err)
	}
	sum := newContentSum(key)
	img := &DirImage{}
	dirs := map[string]bool{".": true}
	for {
		hdr, err := tr.Next()
		if err != nil {
			return nil, rec, templateFileErr(err)
		}
		if hdr.Name == tmplEndName {
			if err := checkEnd(tr, sum); err != nil {
				return nil, rec, templateFileErr(err)
			}
			return img, rec, nil
		}
		e, err := readTemplateEntry(tr, hdr, dirs)
		if err != nil {
			return nil, rec, templateFileErr(fmt.Errorf("%s: %w", hdr.Name, err))
		}
		sum.add(e)
		img.entries = append(img.entries, e)
	}
}

// checkEnd reads the end entry, the last, and compares its sum with the
// entries read.
func checkEnd(tr *tar.Reader, sum contentSum) error {
	got, err := io.ReadAll(io.LimitReader(tr, 64))
	if err != nil {
		return err
	}
	if want := sum.end(); !bytes.Equal(got, want) {
		return fmt.Errorf("its end says %q, its content sums to %q", bytes.TrimSpace(got), bytes.TrimSpace(want))
	}
	if _, err := tr.Next(); err != io.EOF {
		return errors.New("entries past its end")
	}
	return nil
}

func templateFileErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read a data-directory template: %w", err)
}

// seen reports whether the tree has had an entry at rel; dirs holds
// true for a directory, false for a file.
func seen(dirs map[string]bool, rel string) bool {
	_, ok := dirs[rel]
	return ok
}

// readTemplateEntry reads one entry of the tree, dirs the entries before
// it.
func readTemplateEntry(tr *tar.Reader, hdr *tar.Header, dirs map[string]bool) (imageEntry, error) {
	rel, ok := strings.CutPrefix(strings.TrimSuffix(hdr.Name, "/"), tmplTreeDir)
	switch {
	case !ok || !fs.ValidPath(rel) || rel == "." || path.Clean(rel) != rel:
		return imageEntry{}, errors.New("not a path below the tree")
	case !dirs[path.Dir(rel)]:
		return imageEntry{}, errors.New("not below a directory of the tree")
	case seen(dirs, rel):
		return imageEntry{}, errors.New("an entry twice")
	case hdr.Mode&^0o777 != 0:
		return imageEntry{}, fmt.Errorf("mode %o has more than permission bits", hdr.Mode)
	}
	e := imageEntry{rel: rel, mode: fs.FileMode(hdr.Mode)}
	switch hdr.Typeflag {
	case tar.TypeDir:
		e.mode |= fs.ModeDir
		dirs[rel] = true
		return e, nil
	case tar.TypeReg:
		dirs[rel] = false
	default:
		return imageEntry{}, fmt.Errorf("type %q is neither a directory nor a regular file", hdr.Typeflag)
	}
	if hdr.Size > maxTmplEntry {
		return imageEntry{}, fmt.Errorf("%d bytes stored, more than a template holds", hdr.Size)
	}
	e.size = hdr.Size
	if s, ok := hdr.PAXRecords[tmplSizePAX]; ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < hdr.Size || n > maxTmplSize {
			return imageEntry{}, fmt.Errorf("size %q", s)
		}
		e.size = n
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		return imageEntry{}, err
	}
	e.data = data
	return e, nil
}

// RewriteTemplateFile reads the template file at path, has change alter
// its tree and writes it back, its sum made anew: what no other account
// can do to dbrig's own cache, but what a test uses to show what a
// template file can and cannot bring to a server.
func RewriteTemplateFile(path string, change func(*DirImage)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	img, rec, err := readTemplateFile(f, false)
	f.Close()
	if err != nil {
		return err
	}
	change(img)
	var b bytes.Buffer
	if err := writeTemplateFile(&b, rec, img); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}
