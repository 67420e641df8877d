package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// File names that WriteFiles writes.
const (
	HTMLFile     = "report.html"
	MarkdownFile = "report.md"
)

// WriteFiles writes d as report.html and report.md in dir, creating dir if
// needed. Each file is written to a temporary file in dir and renamed into
// place, so a reader never sees half a report and an old report stays whole
// if writing the new one fails.
func WriteFiles(dir string, d *Doc) (htmlPath, mdPath string, err error) {
	var h, m bytes.Buffer
	if err := WriteHTML(&h, d); err != nil {
		return "", "", err
	}
	if err := WriteMarkdown(&m, d); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	htmlPath = filepath.Join(dir, HTMLFile)
	mdPath = filepath.Join(dir, MarkdownFile)
	if err := writeAtomic(htmlPath, h.Bytes()); err != nil {
		return "", "", err
	}
	if err := writeAtomic(mdPath, m.Bytes()); err != nil {
		return "", "", err
	}
	return htmlPath, mdPath, nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, synced before it is renamed over path.
func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
