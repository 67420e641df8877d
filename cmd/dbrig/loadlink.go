package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/study"
)

// loadLinkFlags put an emulated link between a load's users and its server:
// --link PROFILE[,PROFILE...] (a list sweeps, crossed with the users) and a
// flag for each of the link's parameters, which override the profile. The
// load writes them as its study file's [[link]], checked and run as a
// study's, so that a study and a load cannot read a setting differently.
type loadLinkFlags struct {
	fs       *pflag.FlagSet
	profiles string
	// flags are the link parameters' flags, by parameter name: a parameter
	// named as a load's own flag (--rate, --seed) is --link-NAME.
	flags map[string]string
}

func (l *loadLinkFlags) register(fs *pflag.FlagSet) {
	l.fs, l.flags = fs, map[string]string{}
	fs.StringVar(&l.profiles, "link", "", "an emulated network link between the users and the server: `PROFILE` (lan-1g, tukwila-blueridge, rtt-23ms, ...: dbrig link --list-profiles; unix and direct bypass it, and unix cannot go with --agents); a comma list sweeps them, crossed with --users")
	taken := map[string]bool{}
	for _, p := range load.Params() {
		taken[p.FlagName()] = true
	}
	for _, p := range link.Params() {
		name := p.Name
		if taken[name] {
			name = "link-" + name
		}
		l.flags[p.Name] = name
		fs.Var(&writtenValue{}, name, "link: "+p.Doc)
	}
}

// request is the link as the load's study file writes it; nil when no
// link flag was given (the users on the server's own site).
func (l *loadLinkFlags) request() (*study.LoadLink, error) {
	var req study.LoadLink
	if l.fs.Changed("link") {
		for _, p := range strings.Split(l.profiles, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				return nil, fmt.Errorf("--link %s: want profiles separated by commas, such as lan-1g,rtt-5ms", l.profiles)
			}
			if slices.Contains(req.Profiles, p) {
				return nil, fmt.Errorf("--link %s: %s is given twice", l.profiles, p)
			}
			req.Profiles = append(req.Profiles, p)
		}
	}
	for param, name := range l.flags {
		if fl := l.fs.Lookup(name); fl.Changed {
			if req.Settings == nil {
				req.Settings = map[string]any{}
			}
			p, _ := link.LookupParam(param)
			req.Settings[p.Key()] = fl.Value.String()
		}
	}
	if req.Profiles == nil && req.Settings == nil {
		return nil, nil
	}
	return &req, nil
}

var linkKey = regexp.MustCompile(`^(?:link\.\d+\.(\w+)|sweep\.link(?:\.\d+)?)$`)

// flagError words an error of the load's [[link]] for the flag that set
// it; ok is false for an error of another key.
func (l *loadLinkFlags) flagError(e study.SpecError) (err error, ok bool) {
	m := linkKey.FindStringSubmatch(e.Key)
	if m == nil || e.Err == nil {
		return nil, false
	}
	flag, shown := "--link", l.profiles
	if p, found := link.LookupParam(m[1]); found && m[1] != "profile" {
		flag = "--" + l.flags[p.Name]
		shown = l.fs.Lookup(l.flags[p.Name]).Value.String()
		var pe *link.ParamError
		if errors.As(e.Err, &pe) && pe.FromBase {
			flag, shown = "--link", l.profiles
		}
	}
	msg := e.Err.Error()
	if rest, cut := strings.CutPrefix(msg, m[1]); cut && m[1] != "" && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ":")) {
		return errors.New(flag + rest), true // the message names the setting: by its flag
	}
	return fmt.Errorf("%s %s: %s", flag, shown, msg), true
}

// writtenValue holds a link flag as written: the study file's parser reads
// it, as it reads a [[link]] key.
type writtenValue struct{ text string }

func (v *writtenValue) String() string     { return v.text }
func (v *writtenValue) Set(s string) error { v.text = s; return nil }
func (v *writtenValue) Type() string       { return "string" }

// checkOnAgents refuses a path the users on load agents cannot take: the
// server's unix socket is on the server's host, not on theirs (a TCP
// target's or a remote host's point over it was skipped once the agents,
// server and data were ready; a socket target's path was dialled on each
// agent's own host). A link profile is fine: each agent runs it.
func (l *loadLinkFlags) checkOnAgents() error {
	for _, p := range strings.Split(l.profiles, ",") {
		if strings.TrimSpace(p) == study.ProfileUnix {
			return fmt.Errorf("--link %s: unix is the server's socket on its own host, out of reach of the users on the agents' hosts (--agents, --listen-agents): give direct (the server's TCP address) or a link profile, which each agent runs in front of its users", l.profiles)
		}
	}
	return nil
}

// socketOnAgents refuses a --target that names a unix socket when the
// users run on load agents, on other hosts than the socket.
func socketOnAgents(f *loadFlags, logins map[string]engine.Conn) error {
	c, ok := logins["db"]
	if !ok || !c.IsUnix() || f.fleet.agents == "" && f.fleet.listen == "" {
		return nil
	}
	return fmt.Errorf("--target: names the unix socket %s, out of reach of the users on the agents' hosts (--agents, --listen-agents): give the server's TCP address", c.Host)
}
