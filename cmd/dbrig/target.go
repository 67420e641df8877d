package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/study"
)

// connSyntax is the one form of every flag that names a server of the
// user's: run's and every load's --target, doctor's --db, replicate's
// --publisher and --subscriber.
const connSyntax = "[NAME=]URI or [NAME=]env:VAR (postgres://user@host:5432/db, mariadb://user@host:3306/db, host=/var/run/postgresql dbname=app)"

// connArg is one value of such a flag, read and parsed: nothing has
// dialled it yet.
type connArg struct {
	// name is the NAME= the value began with ("" when none).
	name string
	// uri is the connection string as given or read from the environment;
	// it may hold the password, so it is never shown.
	uri    string
	engine engine.Engine
	login  engine.Conn
}

// instanceName is a study's instance name, as study files spell it.
var instanceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// schemePrefix is a URI's scheme and "://".
var schemePrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// libpqKeywords are the keywords of PostgreSQL's keyword/value form: a
// value that starts with one of them and '=' is that form whole
// ("host=/var/run/postgresql dbname=app"), not NAME=URI.
var libpqKeywords = []string{"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "channel_binding",
	"connect_timeout", "client_encoding", "options", "application_name", "fallback_application_name", "keepalives",
	"keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout", "replication", "gssencmode",
	"sslmode", "requiressl", "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode", "sslrootcert",
	"sslcrl", "sslcrldir", "sslsni", "sslnegotiation", "requirepeer", "ssl_min_protocol_version",
	"ssl_max_protocol_version", "krbsrvname", "gsslib", "gssdelegation", "service", "target_session_attrs",
	"load_balance_hosts", "require_auth", "min_protocol_version", "max_protocol_version"}

// splitConnName parts [NAME=]CONN. A value with a scheme, env:VAR, or
// PostgreSQL's keyword/value form has no name; NAME= before any of them,
// or before anything else, is a name. So "db=nonsense" is the instance db
// and a connection string "nonsense" that does not parse, never a
// keyword/value string with a key "db" that dials the default socket.
func splitConnName(value string) (name, conn string) {
	if strings.HasPrefix(value, "env:") || schemePrefix.MatchString(value) {
		return "", value
	}
	before, after, ok := strings.Cut(value, "=")
	if !ok || !instanceName.MatchString(before) {
		return "", value
	}
	if !strings.HasPrefix(after, "env:") && !schemePrefix.MatchString(after) && slices.Contains(libpqKeywords, before) {
		return "", value
	}
	return before, after
}

// parseConnArg reads one value of --flag, from the environment for
// env:VAR, and parses it with the engine its scheme or form names. A
// value that does not parse is refused here, before anything dials it.
// No error shows a password.
func parseConnArg(flag, value string, engines *engine.Registry, getenv func(string) string) (connArg, error) {
	name, conn := splitConnName(value)
	label := "--" + flag // with what of the value is safe to show
	if name != "" {
		label += " " + name
	}
	if conn == "" || conn == "env:" {
		return connArg{}, fmt.Errorf("%s: want %s", label, connSyntax)
	}
	arg := connArg{name: name, uri: conn}
	if v, fromEnv := strings.CutPrefix(conn, "env:"); fromEnv {
		label = "--" + flag + " " + value
		if arg.uri = getenv(v); arg.uri == "" {
			return connArg{}, fmt.Errorf("%s: the environment variable %s is empty or unset", label, v)
		}
		if inner, _ := splitConnName(arg.uri); inner != "" {
			return connArg{}, fmt.Errorf("%s: %s holds %s=...: a variable holds the connection string alone; name the instance on the flag (--%s %s=env:%s)", label, v, inner, flag, inner, v)
		}
	}
	e, login, err := engines.ParseTarget(arg.uri)
	if err != nil {
		return connArg{}, fmt.Errorf("%s: %w", label, err)
	}
	arg.engine, arg.login = e, login
	return arg, nil
}

// parseServerArg reads the value of a flag that names one server whose
// role the flag says (load's db, doctor's db, replicate's publisher): a
// NAME= must be that role. engineName, when set, is the one engine the
// command works with.
func parseServerArg(flag, role, engineName, value string, engines *engine.Registry, getenv func(string) string) (connArg, error) {
	arg, err := parseConnArg(flag, value, engines, getenv)
	if err != nil {
		return connArg{}, err
	}
	if arg.name != "" && arg.name != role {
		return connArg{}, fmt.Errorf("--%s %s=...: this command's server is %s: write --%s %s=URI, or the URI alone", flag, arg.name, role, flag, role)
	}
	if engineName != "" && arg.engine.Name() != engineName {
		want, _ := engines.Lookup(engineName)
		title := engineName
		if want != nil {
			title = want.Title()
		}
		return connArg{}, fmt.Errorf("--%s: a %s server; this command works with %s only", flag, arg.engine.Title(), title)
	}
	return arg, nil
}

// parseTargets reads run's --target flags: the logins by instance name,
// and each target's engine by its URI. A target given without a name
// goes under study.UnnamedTarget, for the study's only instance.
func parseTargets(flags []string, engines *engine.Registry, getenv func(string) string) (map[string]engine.Conn, map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil, nil
	}
	logins, kinds := map[string]engine.Conn{}, map[string]string{}
	var errs []error
	for _, fl := range flags {
		arg, err := parseConnArg("target", fl, engines, getenv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := logins[arg.name]; dup {
			which := arg.name
			if which == study.UnnamedTarget {
				which = "without a name"
			}
			errs = append(errs, fmt.Errorf("--target %s is given twice", which))
			continue
		}
		logins[arg.name], kinds[arg.name] = arg.login, arg.engine.Name()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return logins, kinds, nil
}

// loadTarget reads a load's --target: its one server is the instance db.
func loadTarget(value string, engines *engine.Registry, getenv func(string) string) (map[string]engine.Conn, map[string]string, error) {
	if value == "" {
		return nil, nil, nil
	}
	arg, err := parseServerArg("target", "db", "", value, engines, getenv)
	if err != nil {
		return nil, nil, err
	}
	return map[string]engine.Conn{"db": arg.login}, map[string]string{"db": arg.engine.Name()}, nil
}
