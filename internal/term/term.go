// Package term decides how dbrig writes to a terminal: whether an output is a
// terminal (progress bars and colour) or a pipe (plain lines), and whether the
// user asked for no colour (NO_COLOR, https://no-color.org).
package term

import (
	"io"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether w is a terminal.
// A writer that wraps one (a filter) is a terminal when the one it wraps
// is: it says so with an Fd method, as *os.File does.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	fd := f.Fd()
	if fd == ^uintptr(0) {
		return false
	}
	_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
	return err == nil
}

// ColorEnabled reports whether colour escapes may be written to w: w is a
// terminal, NO_COLOR is unset or empty, and TERM is not "dumb".
func ColorEnabled(w io.Writer, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return false
	}
	return IsTerminal(w)
}

// Style colours text when enabled; otherwise it returns the text unchanged.
type Style struct{ Enabled bool }

func (s Style) wrap(code, text string) string {
	if !s.Enabled {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// Green marks a pass.
func (s Style) Green(t string) string { return s.wrap("32", t) }

// Red marks a failure.
func (s Style) Red(t string) string { return s.wrap("31", t) }

// Yellow marks a warning.
func (s Style) Yellow(t string) string { return s.wrap("33", t) }

// Bold marks a heading.
func (s Style) Bold(t string) string { return s.wrap("1", t) }

// Dim marks detail.
func (s Style) Dim(t string) string { return s.wrap("2", t) }

// Width is w's terminal width in columns, or fallback when w is not a
// terminal (a pipe, a file), whose lines a reader's own viewer wraps.
func Width(w io.Writer, fallback int) int {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !IsTerminal(w) {
		return fallback
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return fallback
	}
	return int(ws.Col)
}
