package script

import (
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// sqlOf is a parsed SQL command as the tests read it: line, numbered text,
// variables by name, what it keeps.
type sqlOf struct {
	line     int
	numbered string
	vars     []string
	result   Result
	prefix   string
	compound bool
}

func sqls(p *Program) []sqlOf {
	var out []sqlOf
	for _, c := range p.Scripts[0].Commands {
		if c.Type != SQLCommand {
			continue
		}
		var vars []string
		for _, s := range c.SQL.Vars {
			vars = append(vars, p.Vars[s])
		}
		out = append(out, sqlOf{c.Line, c.SQL.Numbered, vars, c.SQL.Result, c.SQL.Prefix, c.SQL.Compound})
	}
	return out
}

// TestParseSQL reads SQL commands as pgbench does: a semicolon ends one
// unless quoted, commented or in parentheses; a meta command ends one that
// has none; :name is a variable outside quotes and comments, :: a cast;
// \; joins statements and \: is a colon.
func TestParseSQL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		mariaDB    bool
		want       []sqlOf
	}{
		{"one per semicolon, over lines", "SELECT 1;\nUPDATE t\n  SET a = 1\n  WHERE b = 2;\n",
			false, []sqlOf{{line: 1, numbered: "SELECT 1;"}, {line: 2, numbered: "UPDATE t\n  SET a = 1\n  WHERE b = 2;"}}},
		{"comments and blank lines before a command are skipped", "-- a comment\n\n  -- another\nSELECT 1;",
			false, []sqlOf{{line: 4, numbered: "SELECT 1;"}}},
		{"variables numbered per use", "UPDATE t SET a = a + :delta WHERE id = :id AND b = :delta;",
			false, []sqlOf{{line: 1, numbered: "UPDATE t SET a = a + $1 WHERE id = $2 AND b = $3;", vars: []string{"delta", "id", "delta"}}}},
		{"MariaDB's placeholders", "SELECT :a, :b;", true, []sqlOf{{line: 1, numbered: "SELECT ?, ?;", vars: []string{"a", "b"}}}},
		{"casts, quotes, comments and dollar quotes hide colons and semicolons",
			"SELECT :x::int, ':y;', \"a:b;\", $$ :z; $$, $f$ ; $f$ -- :w;\n, 1 /* :v; */;",
			false, []sqlOf{{line: 1, numbered: "SELECT $1::int, ':y;', \"a:b;\", $$ :z; $$, $f$ ; $f$ -- :w;\n, 1 /* :v; */;", vars: []string{"x"}}}},
		{"E strings escape quotes", "SELECT E'it\\'s; :x', :y;", false,
			[]sqlOf{{line: 1, numbered: "SELECT E'it\\'s; :x', $1;", vars: []string{"y"}}}},
		{"MariaDB strings escape quotes, backquotes quote names", "SELECT 'it\\'s; :x', `a;:b`, :y;", true,
			[]sqlOf{{line: 1, numbered: "SELECT 'it\\'s; :x', `a;:b`, ?;", vars: []string{"y"}}}},
		{"parentheses hide semicolons", "SELECT (1;\n2);", false, []sqlOf{{line: 1, numbered: "SELECT (1;\n2);"}}},
		{"a meta command ends a command without semicolon", "SELECT :a\n\\set x 1\nSELECT 2;", false,
			[]sqlOf{{line: 1, numbered: "SELECT $1", vars: []string{"a"}}, {line: 3, numbered: "SELECT 2;"}}},
		{"gset keeps a row, with a prefix", "SELECT 1 AS one \\gset p_\nSELECT 2 AS two;\n\\gset", false,
			[]sqlOf{{line: 1, numbered: "SELECT 1 AS one", result: Gset, prefix: "p_"}, {line: 2, numbered: "SELECT 2 AS two;", result: Gset}}},
		{"aset over joined statements", "SELECT 4 AS four \\; SELECT 5 AS five \\aset", false,
			[]sqlOf{{line: 1, numbered: "SELECT 4 AS four ; SELECT 5 AS five", result: Aset, compound: true}}},
		{"backslash colon is a colon", "SELECT '\\:x' || \\:y;", false, []sqlOf{{line: 1, numbered: "SELECT '\\:x' || :y;"}}},
		{"parameters and dollar signs in names are not dollar quotes", "SELECT $1, a$b$ FROM t;", false,
			[]sqlOf{{line: 1, numbered: "SELECT $1, a$b$ FROM t;"}}},
		{"END is COMMIT on MariaDB", "BEGIN;\nEND;\nend transaction;", true,
			[]sqlOf{{line: 1, numbered: "BEGIN;"}, {line: 2, numbered: "COMMIT"}, {line: 3, numbered: "COMMIT"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sqls(mustParse(t, tc.text, Options{MariaDB: tc.mariaDB, Protocol: Prepared}))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestParseMeta reads every meta command: \set's expression, \sleep's
// forms, \if's branches linked, pipelines, lines of continued commands.
func TestParseMeta(t *testing.T) {
	t.Parallel()
	text := `\set	aid	random(1, \
  100000 * :scale)
\sleep 10 ms
\sleep 5us
\sleep :pause
\sleep	2
\if :aid > 10
SELECT 1;
\elif :aid > 5
SELECT 2;
\else
SELECT 3;
\endif
\startpipeline
SELECT 4;
\endpipeline
`
	p := mustParse(t, text, Options{Protocol: Extended})
	cmds := p.Scripts[0].Commands
	kinds := []CommandType{Set, Sleep, Sleep, Sleep, Sleep, If, SQLCommand, Elif, SQLCommand, Else, SQLCommand, Endif, StartPipeline, SQLCommand, EndPipeline}
	lines := []int{1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if len(cmds) != len(kinds) {
		t.Fatalf("%d commands, want %d: %+v", len(cmds), len(kinds), cmds)
	}
	for i, c := range cmds {
		if c.Type != kinds[i] || c.Line != lines[i] {
			t.Errorf("command %d: kind %d line %d, want kind %d line %d", i, c.Type, c.Line, kinds[i], lines[i])
		}
	}
	sleeps := []struct{ n, unit int64 }{{10, 1000}, {5, 1}, {0, 1_000_000}, {2, 1_000_000}}
	for i, s := range sleeps {
		if c := cmds[1+i]; c.SleepN != s.n || c.SleepUnit != s.unit {
			t.Errorf("sleep %d: %d × %d µs, want %d × %d", i, c.SleepN, c.SleepUnit, s.n, s.unit)
		}
	}
	if s := cmds[3].SleepSlot; s < 0 || p.Vars[s] != "pause" {
		t.Errorf("\\sleep :pause reads slot %d", s)
	}
	if cmds[5].Next != 7 || cmds[7].Next != 9 || cmds[9].Next != 11 || cmds[7].End != 11 || cmds[9].End != 11 {
		t.Errorf("branches: if→%d elif→%d else→%d, ends %d %d; want 7, 9, 11, ends 11 11", cmds[5].Next, cmds[7].Next, cmds[9].Next, cmds[7].End, cmds[9].End)
	}
	if cmds[0].Text != `\set aid	random(1,    100000 * :scale)` {
		t.Errorf("text of a continued \\set: %q", cmds[0].Text)
	}
}

// TestParseRefusals refuses what pgbench refuses, and what dbrig will not
// run, each with its file and line and what to write instead.
func TestParseRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text, protocol string
		want                 string
	}{
		{"shell", "SELECT 1;\n\\shell echo 1", "", `test.sql:2: \shell: dbrig does not run shell commands from a script: compute the value with \set`},
		{"setshell", "\\setshell x echo 1", "", `test.sql:1: \setshell: dbrig does not run shell commands`},
		{"syncpipeline", "\\startpipeline\nSELECT 1;\n\\syncpipeline\n\\endpipeline", Prepared, `test.sql:3: \syncpipeline: \syncpipeline is pgbench 17's`},
		{"psql's copy", "\\copy t from 'x'", "", `test.sql:1: \copy: \copy is psql's, not pgbench's`},
		{"psql's gexec", "SELECT 1 \\gexec", "", `test.sql:1: \gexec: \gexec is psql's`},
		{"unknown", "\n\n\\frobnicate", "", `test.sql:3: invalid command \frobnicate: a script's meta commands are \set`},
		{"COPY FROM STDIN", "SELECT 1;\nCOPY t FROM STDIN;", "", `test.sql:2: COPY FROM STDIN and TO STDOUT need a data stream`},
		{"gset without SQL", "\\set x 1\n\\gset", "", `test.sql:2: \gset must follow an SQL command`},
		{"gset twice", "SELECT 1 \\gset\n\\gset", "", `test.sql:2: \gset must follow an SQL command`},
		{"gset args", "SELECT 1 \\gset a b", "", `test.sql:1: too many arguments in command "gset"`},
		{"gset in a pipeline", "\\startpipeline\nSELECT 1 \\gset\n\\endpipeline", Prepared, `test.sql:2: \gset and \aset are not allowed in pipeline mode`},
		{"pipeline under the simple protocol", "\\startpipeline\nSELECT 1;\n\\endpipeline", Simple, `test.sql:1: \startpipeline: cannot use pipeline mode with the simple query protocol: set protocol = "extended" or "prepared"`},
		{"nested pipelines", "\\startpipeline\n\\startpipeline\n\\endpipeline", Prepared, `test.sql:2: \startpipeline: already in pipeline mode (since line 1)`},
		{"pipeline left open", "\\startpipeline\nSELECT 1;", Prepared, `test.sql:1: end of script reached with pipeline open`},
		{"endpipeline alone", "SELECT 1;\n\\endpipeline", Prepared, `test.sql:2: \endpipeline: not in pipeline mode`},
		{"pipeline across branches", "\\if 1\n\\startpipeline\n\\else\n\\endpipeline\n\\endif", Prepared, `test.sql:3: \else inside a pipeline started in its \if's branch`},
		{"if without endif", "\\if 1\nSELECT 1;", "", `test.sql:1: \if without matching \endif`},
		{"elif without if", "\\elif 1", "", `test.sql:1: \elif without matching \if`},
		{"else without if", "\\else", "", `test.sql:1: \else without matching \if`},
		{"endif without if", "\\endif", "", `test.sql:1: \endif without matching \if`},
		{"elif after else", "\\if 1\n\\else\n\\elif 0\n\\endif", "", `test.sql:3: \elif after \else`},
		{"else after else", "\\if 1\n\\else\n\\else\n\\endif", "", `test.sql:3: \else after \else`},
		{"else argument", "\\if 0\n\\else BAD\n\\endif", "", `test.sql:2: unexpected argument in command "else"`},
		{"if syntax", "\\if\n\\endif", "", `test.sql:1: syntax error in command "if"`},
		{"elif syntax", "\\if 0\n\\elif +\n\\endif", "", `test.sql:2: syntax error in command "elif"`},
		{"sleep unit", "\\sleep 10 minutes", "", `test.sql:1: unrecognized time unit, must be us, ms or s (minutes)`},
		{"sleep not a number", "\\sleep x", "", `test.sql:1: invalid sleep time, must be an integer (x)`},
		{"sleep not an integer", "\\sleep 1.5", "", `test.sql:1: unrecognized time unit, must be us, ms or s (.5)`},
		{"sleep arguments", "\\sleep 1 ms extra", "", `test.sql:1: too many arguments in command "sleep"`},
		{"sleep missing", "\\sleep", "", `test.sql:1: missing argument in command "sleep"`},
		{"set missing", "\\set x", "", `test.sql:1: missing argument in command "set"`},
		{"set name", "\\set 1x 2", "", `test.sql:1: \set: invalid variable name "1x"`},
		{"set syntax", "\n\\set x 1 +", "", `test.sql:2: syntax error in command "set": syntax error at end of expression`},
		{"empty script", "-- nothing\n", "", `test.sql:1: empty command list for script "test.sql"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]Source{{Name: "test.sql", Text: tc.text, Weight: 1}}, Options{Protocol: tc.protocol})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

// TestPipelineRefusedOnMariaDB refuses a pipeline on MariaDB before
// anything starts, with the file and line, and takes it on PostgreSQL.
func TestPipelineRefusedOnMariaDB(t *testing.T) {
	t.Parallel()
	p := mustParse(t, "SELECT 1;\n\\startpipeline\nSELECT 2;\n\\endpipeline\n", Options{Protocol: Prepared, MariaDB: true})
	err := p.CheckEngine("mariadb")
	if err == nil || !strings.Contains(err.Error(), `test.sql:2: \startpipeline: MariaDB's protocol has no pipeline mode`) {
		t.Errorf("got %v", err)
	}
	if err := p.CheckEngine("postgres"); err != nil {
		t.Errorf("postgres: %v", err)
	}
}

// TestFilesAndDefines reads pgbench's -f FILE@WEIGHT, -b NAME@WEIGHT and
// -D NAME=VALUE, and refuses what pgbench refuses.
func TestFilesAndDefines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeFile(t, dir, "a.sql", "SELECT 1;\n")
	b := writeFile(t, dir, "b@c.sql", "SELECT 2;\n")
	src, err := ParseFiles(a+"@3, select-only, "+b+"@0, tpcb-like@2", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range src {
		got = append(got, filepath.Base(s.Name)+"@"+string(rune('0'+s.Weight)))
	}
	if want := []string{"a.sql@3", "select-only@1", "b@c.sql@0", "tpcb-like@2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for list, want := range map[string]string{
		a + "@one":    `invalid weight specification "@one"`,
		a + "@-1":     `weight specification out of range (0 .. 2147483647): -1`,
		"no-such.sql": `could not open file "no-such.sql"`,
		a + ",,":      `an empty entry`,
	} {
		_, err := ParseFiles(list, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", list, err, want)
		}
	}
	zero, _ := ParseFiles("select-only@0", nil)
	if _, err := Parse(zero, Options{}); err == nil || !strings.Contains(err.Error(), "total script weight must not be zero") {
		t.Errorf("weight 0: %v", err)
	}
	for list, want := range map[string]string{"a=1,c=": `invalid variable definition "c="`, "b,a=1": `invalid variable definition "b"`} {
		if defs, err := ParseDefines(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v %v, want %q", list, defs, err, want)
		}
	}
	defs, err := ParseDefines("a=1, b=x,y ,c_1=é")
	want := []Define{{"a", "1"}, {"b", "x,y "}, {"c_1", "é"}}
	if err != nil || !reflect.DeepEqual(defs, want) {
		t.Errorf("got %v %v, want %v", defs, err, want)
	}
	if _, err := ParseDefines("1a=2"); err == nil || !strings.Contains(err.Error(), "not a variable name") {
		t.Errorf("1a=2: %v", err)
	}
}

// TestBuiltinsArePgbenchs compares the built-in scripts with what pgbench
// --show-script prints.
func TestBuiltinsArePgbenchs(t *testing.T) {
	t.Parallel()
	bin := pgtest.Binaries(t)
	for _, name := range BuiltinNames() {
		out, err := exec.Command(bin.Path("pgbench"), "--show-script="+name).CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench --show-script=%s: %v\n%s", name, err, out)
		}
		_, theirs, _ := strings.Cut(string(out), "\n")
		if strings.TrimSpace(theirs) != strings.TrimSpace(builtins[name]) {
			t.Errorf("%s:\n%s\npgbench:\n%s", name, builtins[name], theirs)
		}
	}
}

// TestKindRefusesAtParse: a study's script parameters are read when the
// study is, so a bad script is refused with its file and line before
// anything starts, at the parameter that named it.
func TestKindRefusesAtParse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.sql", "SELECT 1;\n\n\\shell rm -rf /\n")
	pipe := writeFile(t, dir, "pipe.sql", "\\startpipeline\nSELECT 1;\n\\endpipeline\n")
	k := Kind()
	for _, tc := range []struct {
		set   map[string]any
		param string
		want  string
	}{
		{map[string]any{"script": bad + "@2,select-only"}, "script", bad + `:3: \shell: dbrig does not run shell commands`},
		{map[string]any{"script": pipe, "protocol": Simple}, "script", pipe + `:1: \startpipeline: cannot use pipeline mode with the simple query protocol`},
		{map[string]any{"script": "select-only", "define": "x"}, "script", `invalid variable definition "x"`},
		{map[string]any{"script": "select-only", "max_in_flight": int64(5)}, "max_in_flight", "an open-loop setting"},
		{map[string]any{"script": "select-only", "ramp_up": "10s"}, "ramp_up", "longer than warm_up"},
	} {
		errs := kindErrors(k, testParams(t, tc.set))
		found := false
		for _, e := range errs {
			found = found || e.Param == tc.param && strings.Contains(e.Err.Error(), tc.want)
		}
		if !found {
			t.Errorf("%v: got %v, want %s: %q", tc.set, errs, tc.param, tc.want)
		}
	}
	if errs := kindErrors(k, testParams(t, map[string]any{"script": pipe, "protocol": Prepared})); len(errs) != 0 {
		t.Errorf("a pipeline under the prepared protocol: %v", errs)
	}
	for _, ps := range k.Params {
		if !ps.Bounded() {
			t.Errorf("%s declares no bound", ps.Name)
		}
	}
}
