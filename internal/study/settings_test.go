package study

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/workload"
)

// TestSettingsAStudyMayNotSet: a setting dbrig owns, one the engine's list
// lacks, and a value with a newline are refused when the file is parsed,
// at the file's line and key, with no server: the value once written raw
// into dbrig.conf made the server listen on another port.
func TestSettingsAStudyMayNotSet(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{testKind()})
	with := func(settings string) string {
		return withoutMem(strings.Replace(goodSpec, `settings = { work_mem = "${mem}" }`, "[instance.settings]\n"+settings, 1))
	}
	tests := []struct {
		name, settings string
		want           []string
	}{
		{"the injection", `cluster_name = "x\\'#\nport = 55999 #"`, []string{
			`demo.toml:8: instance.0.settings.cluster_name: a study may vary performance settings only, and dbrig's list of PostgreSQL's has no cluster_name`,
			`demo.toml:8: instance.0.settings.cluster_name: cluster_name = "x\\'#\nport = 55999 #": a value may not hold a control character`,
		}},
		{"a newline in a setting a study may vary", `synchronous_commit = "off\nport = 55999"`, []string{
			`demo.toml:8: instance.0.settings.synchronous_commit: synchronous_commit = "off\nport = 55999": a value may not hold a control character (here U+000A)`,
		}},
		{"a carriage return, a NUL", "work_mem = \"4MB\\r\"\nshared_buffers = \"1\\u0000\"", []string{
			"demo.toml:8: instance.0.settings.work_mem:", "demo.toml:9: instance.0.settings.shared_buffers:",
		}},
		{"who may log in", `hba_file = "/tmp/trust.conf"`, []string{
			"demo.toml:8: instance.0.settings.hba_file: a study may vary performance settings only: hba_file decides who may log in and how",
		}},
		{"files and commands", "data_directory = \"/tmp/x\"\narchive_command = \"touch /tmp/x\"\nshared_preload_libraries = \"auto_explain\"", []string{
			"demo.toml:8: instance.0.settings.data_directory: a study may vary performance settings only: data_directory decides which files",
			"demo.toml:9: instance.0.settings.archive_command: a study may vary performance settings only: archive_command decides which shell commands the server runs",
			"demo.toml:10: instance.0.settings.shared_preload_libraries: a study may vary performance settings only: shared_preload_libraries decides which libraries",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("demo.toml", []byte(with(tt.settings)), reg)
			if err == nil {
				t.Fatalf("Parse accepted %s", tt.settings)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse = %v\nwant %q", err, w)
				}
			}
			if got := strings.Count(err.Error(), "\n") + 1; got != len(tt.want) {
				t.Errorf("Parse = %v\nwant %d errors, each once, got %d", err, len(tt.want), got)
			}
		})
	}
}

// TestSettingsRuleOnEveryEngineAPointRuns: settings that only another
// engine's points use meet that engine's rule when --engine, a swept
// engine or a --target puts the instance there, and a swept value meets
// the value rule.
func TestSettingsRuleOnEveryEngineAPointRuns(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{testKind()})
	src := withoutMem(strings.Replace(goodSpec, `settings = { work_mem = "${mem}" }`,
		"[instance.settings.postgres]\nwork_mem = \"4MB\"\n[instance.settings.mariadb]\nport = 3306\ninit_connect = \"DO 1\"", 1))
	s, err := Parse("demo.toml", []byte(src), reg)
	if err != nil {
		t.Fatalf("the postgres points set nothing of MariaDB's: %v", err)
	}
	for _, opts := range []PlanOptions{{Engine: "mariadb"}, {Targets: map[string]string{"db": "mariadb"}}} {
		_, err := s.PlanWith("", opts)
		for _, w := range []string{
			"demo.toml:10: instance.0.settings.mariadb.port: a study may vary performance settings only: port decides where the server listens",
			"demo.toml:11: instance.0.settings.mariadb.init_connect: a study may vary performance settings only",
		} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("PlanWith(%v) = %v\nwant %q", opts, err, w)
			}
		}
	}
	swept := strings.Replace(src, "engine = \"postgres\"", "engine = \"${engine}\"", 1)
	swept = strings.Replace(swept, "[sweep]\n", "[sweep]\nengine = [\"postgres\", \"mariadb\"]\n", 1)
	if _, err := Parse("demo.toml", []byte(swept), reg); err == nil || !strings.Contains(err.Error(), "instance.0.settings.mariadb.port: a study may vary performance settings only") {
		t.Errorf("a swept engine: Parse = %v, want the MariaDB setting refused", err)
	}
	badValue := strings.Replace(goodSpec, `mem = ["4MB"]`, `mem = ["4MB", "4MB\nport = 55999"]`, 1)
	if _, err := Parse("demo.toml", []byte(badValue), reg); err == nil || !strings.Contains(err.Error(), `demo.toml:7: instance.0.settings.work_mem: work_mem = "4MB\nport = 55999": a value may not hold a control character`) {
		t.Errorf("a swept value with a newline: Parse = %v", err)
	}
}

// withoutMem drops the sweep of mem from a study whose settings no longer
// refer to it, which would be refused as a variable that changes nothing.
func withoutMem(spec string) string { return strings.Replace(spec, "mem = [\"4MB\"]\n", "", 1) }
