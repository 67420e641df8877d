package doctor

import (
	"os"
	"regexp"
	"testing"
)

// trackerCitation matches a reference to an issue tracker ("issue 4",
// "Issue #12", "ticket 7"): a reader of dbrig's output or docs has no such
// tracker, so every check cites the seed it comes from or its reason.
var trackerCitation = regexp.MustCompile(`(?i)\b(issue|ticket|bug)\s*#?\s*[0-9]+`)

func TestChecksCiteSeedsNotTrackers(t *testing.T) {
	for _, c := range Catalog {
		for field, text := range map[string]string{"title": c.Title, "why": c.Why, "source": c.Source} {
			if m := trackerCitation.FindString(text); m != "" {
				t.Errorf("check %s: its %s cites %q: cite the seed or the reason instead", c.ID, field, m)
			}
		}
		if c.Source == "" {
			t.Errorf("check %s has no source", c.ID)
		}
	}
	for _, name := range []string{"../../docs/doctor.md", "collect.sh"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range trackerCitation.FindAllString(string(b), -1) {
			t.Errorf("%s cites %q: cite the seed or the reason instead", name, m)
		}
	}
}
