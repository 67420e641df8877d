package pagecompress

import (
	"os"
	"path/filepath"
	"strings"
)

// readStudy reads a built-in study's file from the source tree.
func readStudy(name string) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "studies", strings.ReplaceAll(name, "-", ""), name+".toml"))
	return b, err == nil
}
