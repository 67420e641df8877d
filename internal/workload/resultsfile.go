package workload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ResultsFile is a run directory's file of results: one Result a line,
// each finished point appended as it ends.
const ResultsFile = "results.jsonl"

// ReadResults reads a run directory's results (none when it has no
// ResultsFile yet). A torn last line (a crash in the middle of a write) is
// ignored; any other bad line is an error naming it. It belongs here, with
// the record, so that what reads a run's distributions (package diagnose)
// needs no more than the workload API.
func ReadResults(dir string) ([]Result, error) {
	f, err := os.Open(filepath.Join(dir, ResultsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeResults(f, filepath.Join(dir, ResultsFile))
}

func decodeResults(r io.Reader, name string) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var pending error
	line := 0
	for sc.Scan() {
		line++
		if pending != nil {
			return nil, pending
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var res Result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			pending = fmt.Errorf("%s:%d: not a result: %w", name, line, err)
			continue
		}
		out = append(out, res)
	}
	return out, sc.Err()
}
