package engine_test

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
)

// TestCheckSettingValue: a value with a control character could end a
// value in a server's configuration file and start a setting of its own;
// quotes, backslashes and any printable text are the writer's to quote.
func TestCheckSettingValue(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"x\\'#\nport = 55999 #", "a\rb", "a\x00b", "a\tb", "a\x7fb", "\u0085"} {
		err := engine.CheckSettingValue("postgres", "cluster_name", v)
		if err == nil || !strings.Contains(err.Error(), "control character") || strings.ContainsAny(err.Error(), "\n\r\x00") {
			t.Errorf("CheckSettingValue(%q) = %v, want a refusal that quotes the value", v, err)
		}
	}
	for _, v := range []string{"", "128MB", `it's \ "quoted" # not a comment`, "été", "on"} {
		if err := engine.CheckSettingValue("postgres", "cluster_name", v); err != nil {
			t.Errorf("CheckSettingValue(%q) = %v, want it allowed", v, err)
		}
	}
}

// TestRefusalQuotesAName: a TOML key may be any quoted string; a name with
// a newline is refused with the newline quoted, not written out.
func TestRefusalQuotesAName(t *testing.T) {
	t.Parallel()
	l := engine.NewStudySettings("postgres", "PostgreSQL", "list.go", []string{"work_mem"})
	if l.Allows("work_mem\nport") {
		t.Fatal("a name with a newline is allowed")
	}
	for _, decides := range []string{"", engine.DecidesListening} {
		if msg := l.Refuse("work_mem\nport", "work_mem\nport", decides).Error(); !strings.Contains(msg, `"work_mem\nport"`) || strings.Contains(msg, "\n") {
			t.Errorf("Refuse = %q, want the name quoted", msg)
		}
	}
}
