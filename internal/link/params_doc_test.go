package link

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/link.md's table of parameters from Params")

const docsPath = "../../docs/link.md"

// docsTable is docs/link.md's table of the parameters as Params has them.
func docsTable() string {
	var b strings.Builder
	b.WriteString("| flag | study key | setting | values |\n| --- | --- | --- | --- |\n")
	for _, p := range Params() {
		b.WriteString("| `--" + p.Name + "` | `" + p.Key() + "` | " + p.Usage() + " | " + p.Bound + " |\n")
	}
	return b.String()
}

// docs/link.md lists every parameter with the line --help gives it and its
// bound, as the code has them.
func TestDocsListEveryParameter(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const begin, end = "-update -->\n", "<!-- /params -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no table of parameters between %q and %q", docsPath, begin, end)
	}
	i += len(begin)
	if want := docsTable(); doc[i:j] != want {
		if *update {
			if err := os.WriteFile(docsPath, []byte(doc[:i]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's table of parameters differs from Params (rerun with -update if the change is intended):\n%s\nwant:\n%s", docsPath, doc[i:j], want)
	}
}
