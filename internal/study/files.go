package study

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// FileSpec is a file that the workload's parameters name, held in the
// study file itself: a [[file]] table with its name and its text.
// A run directory's spec.toml ends with one for every file the study read
// where its file lies, so that a report and a resume read the text that
// ran, never the file as it is later.
type FileSpec struct {
	Name string `toml:"name"`
	Text string `toml:"text"`
}

// fileRead is one file as the study read it.
type fileRead struct {
	text []byte
	err  error
	disk bool // read where the study file lies, not from its [[file]]
}

// readFile reads a file a parameter names: the study's [[file]] of that
// name, else the file relative to the study file's directory (a load's
// study file has none: the working directory). Each name is read once, so
// that every point of a run reads the same text.
func (s *Spec) readFile(name string) ([]byte, error) {
	if r, ok := s.read[name]; ok {
		return r.text, r.err
	}
	if s.read == nil {
		s.read = map[string]fileRead{}
	}
	var r fileRead
	if i := slices.IndexFunc(s.Files, func(f FileSpec) bool { return f.Name == name }); i >= 0 {
		r.text = []byte(s.Files[i].Text)
	} else {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(s.File), name)
		}
		r.text, r.err = os.ReadFile(path)
		r.disk = r.err == nil
	}
	s.read[name] = r
	return r.text, r.err
}

// ReadFile reads a file the study read when it was parsed, as it read it;
// never from the disk.
func (s *Spec) ReadFile(name string) ([]byte, error) {
	if r, ok := s.read[name]; ok && r.err == nil {
		return r.text, nil
	}
	return nil, fmt.Errorf("%s: %w", name, errNotRead)
}

// filesRead are the texts of the files the study read, by name.
func (s *Spec) filesRead() map[string]string {
	out := map[string]string{}
	for name, r := range s.read {
		if r.err == nil {
			out[name] = string(r.text)
		}
	}
	return out
}

// SavedText is the study file as a run directory keeps it: its text, then
// a [[file]] for each file it read where its file lies.
func (s *Spec) SavedText() (string, error) {
	var names []string
	for name, r := range s.read {
		if r.disk {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return s.Text, nil
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(s.Text)
	if !strings.HasSuffix(s.Text, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("\n# The files the study read, as they were when it ran: a report and a resume read these.\n")
	for _, name := range names {
		entry, err := fileTable(FileSpec{Name: name, Text: string(s.read[name].text)})
		if err != nil {
			return "", fmt.Errorf("keep %s in the study file: %w", name, err)
		}
		b.WriteString(entry)
	}
	return b.String(), nil
}

// fileTable writes one [[file]], its text as a literal multi-line string
// that reads as the file did when it can be one, else as TOML escapes it.
func fileTable(f FileSpec) (string, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(struct {
		File []FileSpec `toml:"file"`
	}{[]FileSpec{f}}); err != nil {
		return "", err
	}
	escaped := "\n" + b.String()
	if !literalSafe(f.Text) {
		return escaped, nil
	}
	name, _, _ := strings.Cut(b.String(), "\ntext = ")
	literal := "\n" + name + "\ntext = '''\n" + f.Text + "'''\n"
	var back struct {
		File []FileSpec `toml:"file"`
	}
	if _, err := toml.Decode(literal, &back); err != nil || len(back.File) != 1 || back.File[0] != f {
		return escaped, nil
	}
	return literal, nil
}

// literalSafe reports whether text can be a literal multi-line string:
// no closing quotes in it or at its end, no control characters but tabs
// and newlines.
func literalSafe(text string) bool {
	if strings.Contains(text, "'''") || strings.HasSuffix(text, "'") {
		return false
	}
	return !strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f })
}

// checkFiles refuses a [[file]] without a name, or a name given twice.
func (v *validator) checkFiles() {
	seen := map[string]bool{}
	for i, f := range v.spec.Files {
		key := fmt.Sprintf("file.%d.name", i)
		switch {
		case f.Name == "":
			v.add(key, "missing: the name the workload's parameters give the file")
		case seen[f.Name]:
			v.add(key, "file %q is given twice", f.Name)
		}
		seen[f.Name] = true
	}
}

// errNotRead is a file the workload asked for that the study did not read.
var errNotRead = errors.New("no file of that name was read when the study was")
