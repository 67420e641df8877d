package mariadb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// A setting's name is what mariadbd's options are called, in either
// spelling: "innodb_buffer_pool_size" or "innodb-buffer-pool-size", in any
// case (the server itself ignores case). dbrig writes them with "_".
func normalize(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
}

// ownedSettings are the options dbrig sets itself: where the server listens
// (127.0.0.1 and a private socket only), who it runs as, where its files
// live, and how logins work. A study that set them could open the server
// to the network, run it as root or write outside dbrig's directories.
var ownedSettings = map[string]string{
	"port":                      "instances listen on 127.0.0.1 at a free port",
	"bind_address":              "instances listen on 127.0.0.1 only",
	"extra_port":                "dbrig keeps the extra port for its monitoring connection",
	"extra_max_connections":     "dbrig keeps the extra port for its monitoring connection",
	"skip_networking":           "instances listen on 127.0.0.1 and a private socket",
	"socket":                    "the socket lives in a private 0700 directory",
	"skip_name_resolve":         "dbrig's logins are defined by address",
	"skip_grant_tables":         "every login needs a password",
	"init_file":                 "every login needs a password",
	"user":                      "the server runs as dbrig's unprivileged account",
	"chroot":                    "the server runs in dbrig's instance directory",
	"datadir":                   "the data directory is dbrig's (use an instance's data_dir)",
	"innodb_data_home_dir":      "the data directory is dbrig's (use an instance's data_dir)",
	"innodb_log_group_home_dir": "the redo log directory is dbrig's (use an instance's wal_dir)",
	"basedir":                   "the installation is chosen with --mariadb-bin",
	"pid_file":                  "dbrig tracks the server through its own pid file",
	"log_error":                 "the server log is dbrig's, shown when a start fails",
	"log_basename":              "it moves the pid file and logs out of dbrig's directories",
	"bootstrap":                 "dbrig initialises the data directory itself",
	"no_defaults":               "instances never read option files",
	"defaults_file":             "instances never read option files",
	"defaults_extra_file":       "instances never read option files",
	"defaults_group_suffix":     "instances never read option files",
	"print_defaults":            "it is not a server setting",
	"help":                      "it is not a server setting",
	"verbose":                   "it is not a server setting",
	"version":                   "it is not a server setting",
}

// initSettings take effect only when the data directory is made: they are
// passed to mariadb-install-db as well, and a change needs a new instance.
var initSettings = []string{"innodb_page_size", "innodb_data_file_path", "innodb_undo_tablespaces",
	"lower_case_table_names", "innodb_log_file_size"}

// fixedAtInit are the initSettings a restart cannot change.
var fixedAtInit = []string{"innodb_page_size", "innodb_data_file_path", "innodb_undo_tablespaces", "lower_case_table_names"}

// The option prefixes my_getopt understands: loose- (ignore when unknown),
// maximum- (the upper bound SET may use), skip- and disable- (off, or 0)
// and enable- (on). The option parser judges the value they imply
// (--skip-max-connections is clamped to 10, so refused).
var optionPrefixes = []string{"loose_", "maximum_", "skip_", "enable_", "disable_"}

// spellings lists name and the names it stands for once prefixes are taken
// off ("loose_skip_networking" is also "skip_networking" and "networking").
func spellings(name string) []string {
	out := []string{name}
	for _, p := range optionPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" {
			out = append(out, spellings(rest)...)
		}
	}
	return out
}

func ownedReason(name string) (string, bool) {
	for _, s := range spellings(name) {
		if r, ok := ownedSettings[s]; ok {
			return r, true
		}
	}
	return "", false
}

// catalogue is the set of options one mariadbd knows, as its
// `--verbose --help` lists them.
type catalogue struct {
	names map[string]bool
	// numeric are the options whose value is a number ("--name=#" in the
	// listing).
	numeric map[string]bool
}

var (
	optionLineRE = regexp.MustCompile(`^  (?:-\w, )?--([A-Za-z0-9_-]+)(\[?=#)?`)
	tableLineRE  = regexp.MustCompile(`^(\S+)\s`)
	// optionNumberRE is a number as my_getopt reads one: digits, an optional
	// fraction and exponent (for the options that are doubles), and an
	// optional multiplier suffix K, M, G, T, P or E.
	optionNumberRE = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[kKmMgGtTpPeE]?$`)
)

// parseHelp reads `mariadbd --verbose --help`: the option descriptions
// and the table of variables with their values.
func parseHelp(out []byte) catalogue {
	c := catalogue{names: map[string]bool{}, numeric: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	inTable := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "-------"):
			inTable = true
		case inTable && strings.TrimSpace(line) == "":
			inTable = false
		case inTable:
			if m := tableLineRE.FindStringSubmatch(line); m != nil {
				c.names[normalize(m[1])] = true
			}
		default:
			if m := optionLineRE.FindStringSubmatch(line); m != nil {
				c.names[normalize(m[1])] = true
				if m[2] != "" {
					c.numeric[normalize(m[1])] = true
				}
			}
		}
	}
	return c
}

// known reports whether the server accepts the option name, prefixes
// included.
func (c catalogue) known(name string) bool {
	if c.names[name] {
		return true
	}
	for _, p := range optionPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok && c.known(rest) {
			return true
		}
	}
	return false
}

func (c catalogue) list() []string { return slices.Sorted(maps.Keys(c.names)) }

// badNumber reports whether value is not a number although the option
// takes one. my_getopt reads a value that starts with a letter it takes
// for a multiplier ("maybe", "ten") as 0 without a word, so the option
// parser alone would let the server run with 0 where the study says
// something else.
func (c catalogue) badNumber(name, value string) bool {
	for _, p := range []string{"loose_", "maximum_"} {
		name = strings.TrimPrefix(name, p)
	}
	return c.numeric[name] && value != "" && !optionNumberRE.MatchString(strings.TrimSpace(value))
}

// isPluginLoad reports whether a setting loads plugins, whose own options
// exist only once they are loaded.
func isPluginLoad(name string) bool {
	for _, s := range spellings(name) {
		if s == "plugin_load" || s == "plugin_load_add" {
			return true
		}
	}
	return false
}

// optionArg is a setting as a mariadbd argument: "--name=value", or
// "--name" alone for an empty value ("skip_log_bin" = "").
func optionArg(name, value string) string {
	if value == "" {
		return "--" + name
	}
	return "--" + name + "=" + value
}

// settingArgs are the settings as mariadbd arguments, in a stable order.
func settingArgs(settings map[string]string) []string {
	var args []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, optionArg(k, settings[k]))
	}
	return args
}

// normalizeSettings spells every name with "_" in lower case; two
// spellings of one name are an error.
func normalizeSettings(settings map[string]string) (map[string]string, []error) {
	out := make(map[string]string, len(settings))
	from := map[string]string{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		n := normalize(k)
		if prev, dup := from[n]; dup {
			errs = append(errs, &engine.SettingError{Engine: EngineName, Key: k, Value: settings[k],
				Msg: fmt.Sprintf("setting %s is given twice (also as %s)", k, prev), NameRefused: true})
			continue
		}
		from[n] = k
		out[n] = settings[k]
	}
	return out, errs
}

// helpRun runs mariadbd's option parser over args without starting a
// server: `mariadbd --no-defaults ARGS --verbose --help`. It returns the
// option list (stdout) and what the parser refused.
func (e *Engine) helpRun(ctx context.Context, bin Binaries, args []string) (stdout []byte, problems []string, err error) {
	full := []string{"--no-defaults"}
	if bin.BaseDir != "" {
		full = append(full, "--basedir="+bin.BaseDir)
	}
	full = append(full, args...)
	full = append(full, "--verbose", "--help")
	cmd := exec.CommandContext(ctx, bin.Server, full...)
	cmd.Env = append(cmd.Environ(), "LC_ALL=C")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("%s --verbose --help: %w", bin.Server, ctx.Err())
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		return nil, nil, fmt.Errorf("run %s --verbose --help: %w", bin.Server, runErr)
	}
	problems = parserProblems(errOut.String(), bin.Server, runErr != nil)
	if runErr != nil && len(problems) == 0 {
		problems = []string{fmt.Sprintf("mariadbd's option parser refused it (%v)", runErr)}
	}
	return out.Bytes(), problems, nil
}

var (
	logPrefixRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d\s+\d\d?:\d\d:\d\d\s+\d+\s+`)
	// Warnings that mean the server would not run with the value given: a
	// number clamped into range, a value ignored or not recognised.
	refusingWarningRE = regexp.MustCompile(`(?i)adjusted to|invalid|ignoring|unknown|incorrect|recognized|can't|couldn't`)
	// Lines that say nothing about the settings.
	noiseRE = regexp.MustCompile(`max_open_files|Changed limits|^Aborting$|Parsing options for plugin .* failed|Couldn't load plugins from`)
)

// parserProblems picks what mariadbd's option parser refused out of its
// standard error: errors, warnings that mean the value is not used as
// given, and, when it failed, lines without a log tag (a character set it
// does not know). On success such lines are diagnostics ("Warning: Memory
// not freed" after a plugin's help).
func parserProblems(stderr, program string, failed bool) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(logPrefixRE.ReplaceAllString(line, ""))
		if line == "" {
			continue
		}
		refused := failed
		switch {
		case strings.HasPrefix(line, "[ERROR]"):
			line = strings.TrimSpace(strings.TrimPrefix(line, "[ERROR]"))
			refused = true
		case strings.HasPrefix(line, "[Warning]"):
			line = strings.TrimSpace(strings.TrimPrefix(line, "[Warning]"))
			refused = refusingWarningRE.MatchString(line)
		case strings.HasPrefix(line, "[Note]"):
			refused = false
		}
		for _, p := range []string{"Buffered error:", "Buffered warning:", program + ":", "mariadbd:"} {
			line = strings.TrimSpace(strings.TrimPrefix(line, p))
		}
		if refused && !noiseRE.MatchString(line) && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

// catalogueFor returns the options mariadbd knows with these plugin loads,
// cached per plugin list.
func (e *Engine) catalogueFor(ctx context.Context, bin Binaries, pluginArgs []string) (catalogue, error) {
	key := strings.Join(pluginArgs, "\x00")
	e.mu.Lock()
	c, ok := e.catalogues[key]
	e.mu.Unlock()
	if ok {
		return c, nil
	}
	// Unknown options and failed plugin loads do not stop the listing;
	// they are reported by the value check.
	out, _, err := e.helpRun(ctx, bin, pluginArgs)
	if err != nil {
		return catalogue{}, err
	}
	c = parseHelp(out)
	if len(c.names) < 100 {
		return catalogue{}, fmt.Errorf("%s --verbose --help listed %d options: cannot read its catalogue", bin.Server, len(c.names))
	}
	e.mu.Lock()
	e.catalogues[key] = c
	e.mu.Unlock()
	return c, nil
}

// CheckSettings validates server settings before anything starts: each
// name against the options `mariadbd --verbose --help` lists (a misspelt
// name is refused with the closest valid one), names dbrig owns are
// refused, and the values go through mariadbd's own option parser (the
// same command with the settings as arguments), which refuses malformed
// numbers, unknown enumeration values, character sets and collations, and
// clamps out-of-range numbers (a clamped value is refused: the server would
// run with another value than the study says).
//
// Some values can only be checked by starting a server: a storage engine
// name (default_storage_engine), a compression algorithm whose provider
// plugin is missing, paths the server opens, sizes that do not fit in
// memory. Start reports those with the end of the server's log.
//
// The cost is one mariadbd process (about 0.07 s here) for the catalogue,
// once per plugin list, and one per distinct set of settings, plus one per
// setting when the set is refused (to say which).
func (e *Engine) CheckSettings(ctx context.Context, settings map[string]string) []error {
	if len(settings) == 0 {
		return nil
	}
	bin, err := e.FindBinaries(ctx)
	if err != nil {
		return []error{err}
	}
	norm, errs := normalizeSettings(settings)
	var pluginArgs []string
	for _, k := range slices.Sorted(maps.Keys(norm)) {
		if isPluginLoad(k) {
			pluginArgs = append(pluginArgs, optionArg(k, norm[k]))
		}
	}
	cat, err := e.catalogueFor(ctx, bin, pluginArgs)
	if err != nil {
		return append(errs, err)
	}
	toCheck := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(norm)) {
		v := norm[k]
		if reason, owned := ownedReason(k); owned {
			errs = append(errs, &engine.SettingError{Engine: EngineName, Key: k, Value: v,
				Msg: fmt.Sprintf("setting %s is managed by dbrig (%s)", k, reason), NameRefused: true})
			continue
		}
		if !cat.known(k) {
			errs = append(errs, &engine.SettingError{Engine: EngineName, Key: k, Value: v,
				Msg:     fmt.Sprintf("unknown MariaDB %s setting %s (not among the options `mariadbd --verbose --help` lists)", bin.Version, k),
				Closest: engine.Closest(k, cat.list()), NameRefused: true})
			continue
		}
		if cat.badNumber(k, v) {
			errs = append(errs, &engine.SettingError{Engine: EngineName, Key: k, Value: v,
				Msg: fmt.Sprintf("setting %s = %q: want a number (such as 2, 64M or 0.5)", k, v)})
			continue
		}
		toCheck[k] = v
	}
	return append(errs, e.checkValues(ctx, bin, pluginArgs, toCheck)...)
}

// checkValues runs the option parser over all settings at once and, when it
// refuses something, over each setting alone to say which.
func (e *Engine) checkValues(ctx context.Context, bin Binaries, pluginArgs []string, settings map[string]string) []error {
	if len(settings) == 0 {
		return nil
	}
	problems, err := e.parse(ctx, bin, pluginArgs, settings)
	if err != nil {
		return []error{err}
	}
	if len(problems) == 0 {
		return nil
	}
	var errs []error
	keys := slices.Sorted(maps.Keys(settings))
	for _, k := range keys {
		if isPluginLoad(k) {
			continue // loaded in every run: its problems belong to the set
		}
		alone, err := e.parse(ctx, bin, pluginArgs, map[string]string{k: settings[k]})
		if err != nil {
			return append(errs, err)
		}
		if len(alone) > 0 {
			errs = append(errs, &engine.SettingError{Engine: EngineName, Key: k, Value: settings[k],
				Msg: fmt.Sprintf("setting %s = %q: mariadbd refuses it: %s", k, settings[k], strings.Join(alone, "; "))})
		}
	}
	if len(errs) == 0 {
		// Refused together but not alone: a plugin load, or a combination.
		k := keys[0]
		errs = append(errs, &engine.SettingError{Engine: EngineName, Key: k, Value: settings[k],
			Msg: fmt.Sprintf("settings %s: mariadbd refuses them together: %s", strings.Join(keys, ", "), strings.Join(problems, "; "))})
	}
	return errs
}

// parse runs the option parser once, cached per set of arguments.
func (e *Engine) parse(ctx context.Context, bin Binaries, pluginArgs []string, settings map[string]string) ([]string, error) {
	args := slices.Clone(pluginArgs)
	for _, a := range settingArgs(settings) {
		if !slices.Contains(args, a) {
			args = append(args, a)
		}
	}
	key := strings.Join(args, "\x00")
	e.mu.Lock()
	p, ok := e.parsed[key]
	e.mu.Unlock()
	if ok {
		return p, nil
	}
	_, p, err := e.helpRun(ctx, bin, args)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.parsed[key] = p
	e.mu.Unlock()
	return p, nil
}
