// Package studies embeds the built-in study files, so that `dbrig run NAME`
// works from the binary alone.
package studies

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.toml
var files embed.FS

// Names lists the built-in studies, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".toml"))
	}
	sort.Strings(out)
	return out
}

// Read returns a built-in study's file by name.
func Read(name string) ([]byte, bool) {
	b, err := files.ReadFile(name + ".toml")
	return b, err == nil
}
