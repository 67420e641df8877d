package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// What a setting dbrig owns decides, for the message that refuses it. A
// study varies how fast a server is; where it listens, who logs in, which
// files, programs and libraries it uses, what it logs where, its TLS and
// its replication connections keep dbrig's promises (loopback and a
// private socket only, one login with a password, nothing outside the
// instance's directory, no program of the study's running as the server
// account), so they are dbrig's.
const (
	DecidesListening   = "where the server listens"
	DecidesLogins      = "who may log in and how"
	DecidesFiles       = "which files and directories the server reads and writes"
	DecidesCommands    = "which shell commands the server runs"
	DecidesLibraries   = "which libraries the server loads"
	DecidesLogging     = "what the server logs and where"
	DecidesTLS         = "the server's TLS"
	DecidesReplication = "the server's replication connections"
	DecidesAccount     = "which account the server runs as"
)

// StudySettings is one engine's list of the settings a study may vary: an
// allowlist, so that a setting the list does not name is refused whatever
// it is, and a new server version's new setting waits until someone adds
// it. Names are in the engine's canonical spelling.
type StudySettings struct {
	engine string // the engine's name ("postgres")
	title  string // its name for people ("PostgreSQL")
	where  string // the file that holds the list
	names  map[string]bool
}

// NewStudySettings makes an engine's list from groups of names (memory,
// planner, WAL ...); where is the source file that holds it, for the
// message that says how to ask for a missing setting.
func NewStudySettings(engineName, title, where string, groups ...[]string) *StudySettings {
	l := &StudySettings{engine: engineName, title: title, where: where, names: map[string]bool{}}
	for _, g := range groups {
		for _, n := range g {
			l.names[n] = true
		}
	}
	return l
}

// Allows reports whether a study may set the setting of this canonical
// name.
func (l *StudySettings) Allows(name string) bool { return l.names[name] }

// Names lists the settings a study may vary, sorted.
func (l *StudySettings) Names() []string { return slices.Sorted(maps.Keys(l.names)) }

// Refuse is the error for a name the list lacks, as the study wrote it
// (key); decides is what the setting decides when dbrig owns it, "" when
// the list simply does not name it.
func (l *StudySettings) Refuse(key, canonical, decides string) *SettingError {
	se := &SettingError{Engine: l.engine, Key: key, NameRefused: true}
	if decides != "" {
		se.Msg = fmt.Sprintf("a study may vary performance settings only: %s decides %s, which belongs to dbrig", printable(key), decides)
		return se
	}
	se.Msg = fmt.Sprintf("a study may vary performance settings only, and dbrig's list of %s's has no %s", l.title, printable(key))
	if se.Closest = Closest(canonical, l.Names()); se.Closest == "" {
		se.Msg += fmt.Sprintf(": if it is a performance setting, ask for it to be added to the list in %s", l.where)
	}
	return se
}

// CheckSettingValue refuses a setting's value that holds a control
// character (a newline, carriage return, NUL, tab ...): in a server's
// configuration file a newline ends the value and starts a setting of the
// study's own, and no performance setting needs one.
func CheckSettingValue(engineName, key, value string) error {
	i := slices.IndexFunc([]rune(value), unicode.IsControl)
	if i < 0 {
		return nil
	}
	return &SettingError{Engine: engineName, Key: key, Value: value,
		Msg: fmt.Sprintf("%s = %q: a value may not hold a control character (here %U): a newline, carriage return or NUL would end it in the server's configuration", key, value, []rune(value)[i])}
}

// printable is a name as a message shows it: quoted when it holds a
// control character (a TOML key may be any quoted string), so no name
// writes a line of its own into the output.
func printable(name string) string {
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return strconv.Quote(name)
	}
	return name
}
