package script

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/workload"
)

// builtins are pgbench 15's built-in scripts, word for word
// (pgbench --show-script NAME).
var builtins = map[string]string{
	"tpcb-like": `\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`,
	"simple-update": `\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`,
	"select-only": `\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
`,
}

// BuiltinNames are the built-in scripts' names.
func BuiltinNames() []string { return []string{"tpcb-like", "simple-update", "select-only"} }

// IsBuiltin reports whether name is a built-in script.
func IsBuiltin(name string) bool { _, ok := builtins[name]; return ok }

// maxWeight is pgbench's largest weight (INT_MAX).
const maxWeight = 1<<31 - 1

// ParseFiles reads a list "FILE[@WEIGHT],..." of script files and built-in
// names (tpcb-like, simple-update, select-only) into sources, each file
// through read (os.ReadFile when nil); the weight defaults to 1, as
// pgbench's -f FILE@WEIGHT and -b NAME@WEIGHT.
func ParseFiles(list string, read workload.ReadFile) ([]Source, error) {
	entries, err := parseList(list)
	if err != nil {
		return nil, err
	}
	if read == nil {
		read = os.ReadFile
	}
	out := make([]Source, 0, len(entries))
	for _, e := range entries {
		if text, ok := builtins[e.Name]; ok {
			out = append(out, Source{Name: e.Name, Text: text, Weight: e.Weight, Builtin: true})
			continue
		}
		b, err := read(e.Name)
		if err != nil {
			return nil, openError(e.Name, err)
		}
		out = append(out, Source{Name: e.Name, Text: string(b), Weight: e.Weight})
	}
	return out, nil
}

// parseList reads "FILE[@WEIGHT],..." without reading the files.
func parseList(list string) ([]Source, error) {
	var out []Source
	for _, spec := range strings.Split(list, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			return nil, fmt.Errorf("%q: an empty entry; want FILE[@WEIGHT] or a built-in (%s), separated by commas", list, strings.Join(BuiltinNames(), ", "))
		}
		name, weight := spec, 1
		if at := strings.LastIndexByte(spec, '@'); at >= 0 {
			w, err := strconv.ParseInt(spec[at+1:], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: invalid weight specification %q: want a whole number (FILE@WEIGHT)", spec, spec[at:])
			}
			if w < 0 || w > maxWeight {
				return nil, fmt.Errorf("%q: weight specification out of range (0 .. %d): %d", spec, maxWeight, w)
			}
			name, weight = spec[:at], int(w)
		}
		out = append(out, Source{Name: name, Weight: weight, Builtin: IsBuiltin(name)})
	}
	return out, nil
}

// openError says that a script could not be read: by the name the list
// gave it, and where that led when it led elsewhere (beside a study file).
func openError(name string, err error) error {
	where := ""
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if pe.Path != name {
			where = " (" + pe.Path + ")"
		}
		err = pe.Err
	}
	return fmt.Errorf("could not open file %q%s: %w (the built-in scripts are %s)", name, where, err, strings.Join(BuiltinNames(), ", "))
}

// ParseDefines reads "NAME=VALUE,NAME=VALUE" (pgbench's -D, several at
// once). A value may hold commas: an entry ends only at a comma followed by
// another NAME=.
func ParseDefines(list string) ([]Define, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []Define
	parts := strings.Split(list, ",")
	for i := 0; i < len(parts); i++ {
		entry := parts[i]
		for i+1 < len(parts) && !startsDefine(parts[i+1]) {
			i++
			entry += "," + parts[i]
		}
		name, value, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("invalid variable definition %q: want NAME=VALUE", entry)
		}
		if !validVarName(name) {
			return nil, fmt.Errorf("invalid variable definition %q: %q is not a variable name (letters, digits and _, not starting with a digit)", entry, name)
		}
		out = append(out, Define{Name: name, Value: value})
	}
	return out, nil
}

// startsDefine reports whether s begins with NAME=.
func startsDefine(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	return ok && validVarName(strings.TrimSpace(name))
}
