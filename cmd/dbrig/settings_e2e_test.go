package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/internal/workload/tpch"
)

// TestStudyFileCannotReachWhatDbrigOwns: a study file that sets who may
// log in, a shell command, or a value with a newline (which once ended a
// value in dbrig.conf and made the server listen on another port) is
// refused with its file, line and key and exit code 2 before any server
// starts, through dbrig run, --engine and --resume.
func TestStudyFileCannotReachWhatDbrigOwns(t *testing.T) {
	t.Parallel()
	spec, err := os.ReadFile("../../studies/rbarlatency/rbar-latency.toml")
	if err != nil {
		t.Fatal(err)
	}
	owned := strings.Replace(string(spec), `jit = "off"`, `jit = "off"`+"\nhba_file = \"/tmp/trust.conf\"\narchive_command = \"touch /tmp/x\"\ncluster_name = \"x\\\\'#\\nport = 55999 #\"", 1)
	// MariaDB's settings meet MariaDB's rule on the points that run it.
	ownedMaria := strings.Replace(string(spec), `innodb_buffer_pool_size = "128M"`, `innodb_buffer_pool_size = "128M"`+"\ninit_file = \"/tmp/x.sql\"", 1)
	dir := t.TempDir()
	file, fileMaria := filepath.Join(dir, "owned.toml"), filepath.Join(dir, "owned-maria.toml")
	for name, text := range map[string]string{file: owned, fileMaria: ownedMaria} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resume := filepath.Join(dir, "resume")
	if err := os.Mkdir(resume, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"spec.toml": owned, "run.json": `{"study": "rbar-latency", "scale": "smoke"}`} {
		if err := os.WriteFile(filepath.Join(resume, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The first added setting's line, below the line it follows, so that
	// the study may grow above it.
	after := func(anchor string) int {
		return strings.Count(string(spec)[:strings.Index(string(spec), anchor)], "\n") + 2
	}
	pg, maria := after(`jit = "off"`), after(`innodb_buffer_pool_size = "128M"`)
	at := func(file string, line int) string { return file + ":" + strconv.Itoa(line) + ": " }
	pgWant := []string{
		at("owned.toml", pg) + "instance.0.settings.postgres.hba_file: a study may vary performance settings only: hba_file decides who may log in and how",
		at("owned.toml", pg+1) + "instance.0.settings.postgres.archive_command: a study may vary performance settings only: archive_command decides which shell commands the server runs",
		at("owned.toml", pg+2) + `instance.0.settings.postgres.cluster_name: cluster_name = "x\\'#\nport = 55999 #": a value may not hold a control character`,
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"run", file, "--scale", "smoke", "--out", filepath.Join(dir, "run")}, pgWant},
		{[]string{"run", fileMaria, "--scale", "smoke", "--engine", "mariadb", "--out", filepath.Join(dir, "run")},
			[]string{at("owned-maria.toml", maria) + "instance.0.settings.mariadb.init_file: a study may vary performance settings only: init_file decides who may log in and how"}},
		{[]string{"run", "--resume", resume}, []string{at("spec.toml", pg) + "instance.0.settings.postgres.hba_file: a study may vary performance settings only"}},
	}
	for _, tt := range tests {
		base := pgtest.BaseDir(t)
		code, _, stderr := runDbrig(t, base, nil, tt.args...)
		if code != 2 {
			t.Errorf("dbrig %s exited %d, want 2:\n%s", strings.Join(tt.args, " "), code, stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("dbrig %s: stderr lacks %q:\n%s", strings.Join(tt.args, " "), w, stderr)
			}
		}
		if left, _ := os.ReadDir(base); len(left) > 0 {
			t.Errorf("dbrig %s made %v in its TMPDIR: nothing may start", strings.Join(tt.args, " "), left)
		}
		if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
			t.Errorf("dbrig %s made a run directory", strings.Join(tt.args, " "))
		}
	}
}

// TestBuiltInStudiesSetOnlyWhatAStudyMay: every setting of the built-in
// studies and of the study files dbrig load writes is on its engine's list
// of what a study may vary, at every scale and on every engine a study
// runs on (--engine), so the list refuses nothing dbrig itself sets.
func TestBuiltInStudiesSetOnlyWhatAStudyMay(t *testing.T) {
	t.Parallel()
	reg := newRegistry(binDirs{})
	files := map[string][]byte{}
	for _, name := range reg.Studies() {
		b, _ := reg.Builtin(name)
		files[name] = b.File
	}
	for _, eng := range reg.Engines().Names() {
		var err error
		if files["load-tpch-"+eng], err = study.LoadSpec(study.LoadRequest{Kind: tpch.Kind(), Engine: eng,
			Params: workload.Params{"scale_factor": 1.0, "streams": int64(3)}, Sweep: []any{int64(0), int64(2)}}); err != nil {
			t.Fatal(err)
		}
		if files["load-oltp-"+eng], err = study.LoadSpec(study.LoadRequest{Kind: oltp.Kind(), Engine: eng,
			Params: workload.Params{"duration": "1m0s", "warm_up": "1s", "keying": "1s", "tx_limit": "1m0s"}, Sweep: []any{int64(8), int64(200)}}); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range files {
		spec, err := study.Parse(name+".toml", text, reg)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		engines := spec.Kind().Engines
		if len(engines) == 0 {
			engines = reg.Engines().Names()
		}
		for _, scale := range append([]string{""}, spec.ScaleNames()...) {
			for _, eng := range engines {
				if _, err := spec.PlanWith(scale, study.PlanOptions{Engine: eng}); err != nil && !allForeignFlatSettings(err) {
					t.Errorf("%s at scale %q on %s: %v", name, scale, eng, err)
				}
			}
		}
	}
}

// allForeignFlatSettings reports whether err only refuses a study's flat
// settings on another engine than the file names, which is not the
// list's doing.
func allForeignFlatSettings(err error) bool {
	return !slices.ContainsFunc(strings.Split(err.Error(), "\n"), func(line string) bool {
		return !strings.Contains(line, "put each engine's settings under")
	})
}
