package study

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

// fileKind is the demo kind with a parameter that names a file, which it
// refuses when the file says "bad".
func fileKind() workload.Kind {
	k := testKind()
	k.Name = "filedemo"
	k.Params = append(k.Params, workload.ParamSpec{Name: "script", Type: workload.StringParam})
	k.CheckFiles = func(p workload.Params, read workload.ReadFile) []workload.ParamError {
		text, err := read(p.String("script"))
		if err == nil && strings.Contains(string(text), "bad") {
			err = fmt.Errorf("%s:1: bad", p.String("script"))
		}
		if err != nil {
			return []workload.ParamError{{Param: "script", Err: err}}
		}
		return nil
	}
	return k
}

const fileStudy = `name = "files"
title = "A study whose workload reads a file"

[[instance]]
name = "db"
engine = "postgres"

[workload]
kind = "filedemo"
rows = 10
script = "orders.sql"
`

// A file a study's parameter names is read beside the study file, refused
// at the key that named it, and kept in the run's copy of the study file,
// which later reads the text that ran and never the file as it is now.
func TestAStudyKeepsTheFilesItRead(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{fileKind()})
	dir := t.TempDir()
	path := filepath.Join(dir, "files.toml")
	orders := filepath.Join(dir, "orders.sql")
	if err := os.WriteFile(orders, []byte("SELECT 'it''s';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := Parse(path, []byte(fileStudy), reg)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := spec.SavedText()
	if err != nil || !strings.Contains(saved, "[[file]]") {
		t.Fatalf("saved study file (%v):\n%s", err, saved)
	}
	if text, err := spec.ReadFile("orders.sql"); err != nil || string(text) != "SELECT 'it''s';\n" {
		t.Errorf("ReadFile: %q, %v", text, err)
	}
	if _, err := spec.ReadFile("other.sql"); err == nil {
		t.Error("ReadFile of a file the study did not read gives a text")
	}

	// The file changes after the run: the run's copy still reads what ran,
	// wherever it lies.
	if err := os.WriteFile(orders, []byte("bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(filepath.Join(t.TempDir(), "spec.toml"), []byte(saved), reg)
	if err != nil {
		t.Fatalf("the saved study file: %v", err)
	}
	if text, err := again.ReadFile("orders.sql"); err != nil || string(text) != "SELECT 'it''s';\n" {
		t.Errorf("the saved study file reads %q, %v", text, err)
	}

	_, err = Parse(path, []byte(fileStudy), reg)
	var es SpecErrors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Key != "workload.script" || !strings.Contains(es[0].Error(), "orders.sql:1: bad") {
		t.Errorf("a bad file: %v, want one error at workload.script", err)
	}
	_, err = Parse(path, []byte(fileStudy+"\n[[file]]\nname = \"x\"\ntext = \"\"\n[[file]]\nname = \"x\"\ntext = \"\"\n"), reg)
	if err == nil || !strings.Contains(err.Error(), `file "x" is given twice`) {
		t.Errorf("a file given twice: %v", err)
	}
}
