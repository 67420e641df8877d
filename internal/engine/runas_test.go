package engine

import (
	"context"
	"strings"
	"testing"
)

// TestRunAsGivesTheAccountNoneOfDbrigsEnvironment: a program RunAs
// starts sees the fixed PATH, LC_ALL=C and dbrig's TZ, and no other
// variable of dbrig's. Not parallel: it sets the process's environment.
func TestRunAsGivesTheAccountNoneOfDbrigsEnvironment(t *testing.T) {
	t.Setenv("DBRIG_ENV_PROBE", "planted")
	t.Setenv("TZ", "Europe/Paris")
	out, err := RunAs(context.Background(), ServerUser{}, t.TempDir(), "", "/usr/bin/env")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(out)
	want := []string{installerPath, "LC_ALL=C", "TZ=Europe/Paris"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the program's environment: %q, want %q", got, want)
	}
}

// TestTemplateKeyHoldsTheZone: processes with different time zones make
// different templates (initdb writes the zone into postgresql.conf); the
// same zone, the same. Not parallel: it sets the process's environment.
func TestTemplateKeyHoldsTheZone(t *testing.T) {
	key := testKey(t, "postgres")
	name := func(tz string) string {
		t.Setenv("TZ", tz)
		rec, err := key.record()
		if err != nil {
			t.Fatal(err)
		}
		return rec.fileName()
	}
	if utc, paris := name("UTC"), name("Europe/Paris"); utc == paris || utc != name("UTC") {
		t.Errorf("template names for UTC, Europe/Paris, UTC: %s, %s, %s", utc, paris, name("UTC"))
	}
}
