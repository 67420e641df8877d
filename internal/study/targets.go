package study

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/topology"
)

// UnnamedTarget is the key of Options.Targets and Options.TargetEngines
// for a --target given without NAME=: it stands for the study's only
// instance, and a study of several instances refuses it, naming them.
const UnnamedTarget = ""

// SettingDiff is a server setting the study sets to one value and a
// target runs with another. dbrig never reconfigures a target, so the
// target's value is the one every point ran with.
type SettingDiff struct {
	Name   string `json:"name"`
	Study  string `json:"study"`
	Target string `json:"target"`
}

func (d SettingDiff) String() string {
	return fmt.Sprintf("%s: study: %s, target: %s (the target's ran)", d.Name, d.Study, d.Target)
}

// nameTargets gives a target given without a name the study's only
// instance's name. It returns new maps; the caller's stay as they were.
func nameTargets(spec *Spec, logins map[string]engine.Conn, engines map[string]string) (map[string]engine.Conn, map[string]string, error) {
	eng, unnamed := engines[UnnamedTarget]
	if !unnamed {
		return logins, engines, nil
	}
	var names []string
	for _, in := range spec.Instances {
		names = append(names, in.Name)
	}
	if len(names) != 1 {
		return nil, nil, fmt.Errorf("--target without a name: study %s has %d instances (%s): say which one your server stands for, --target NAME=URI or NAME=env:VAR",
			spec.Name, len(names), strings.Join(names, ", "))
	}
	name := names[0]
	if _, twice := engines[name]; twice {
		return nil, nil, fmt.Errorf("--target %s is given twice (once without its name: study %s has the one instance %s)", name, spec.Name, name)
	}
	outLogins, outEngines := maps.Clone(logins), maps.Clone(engines)
	delete(outLogins, UnnamedTarget)
	delete(outEngines, UnnamedTarget)
	if login, ok := logins[UnnamedTarget]; ok {
		outLogins[name] = login
	}
	outEngines[name] = eng
	return outLogins, outEngines, nil
}

// checkTargetSweeps refuses a plan that sweeps a setting of an instance a
// target stands for: the points would ask for values one server cannot
// take in turn, since dbrig never reconfigures a target. A setting with
// one value in every point is no sweep: the target runs with its own
// value where it differs, and the run records both.
func (p *Plan) checkTargetSweeps() SpecErrors {
	s := p.Spec
	type swept struct {
		key    string
		values []string
		combos int
	}
	seen := map[string]*swept{} // by instance and setting
	var order []string
	for _, c := range p.Combos {
		for _, in := range c.Instances {
			if in.Target == "" {
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(in.Settings)) {
				id := in.Name + "/" + name
				sw, ok := seen[id]
				if !ok {
					sw = &swept{key: c.SettingKey(in.Name, name)}
					seen[id], order = sw, append(order, id)
				}
				sw.combos++
				if !slices.Contains(sw.values, in.Settings[name]) {
					sw.values = append(sw.values, in.Settings[name])
				}
			}
		}
	}
	var errs SpecErrors
	for _, id := range order {
		sw := seen[id]
		if len(sw.values) < 2 && sw.combos == len(p.Combos) {
			continue
		}
		instance, name, _ := strings.Cut(id, "/")
		values := strings.Join(sw.values, ", ")
		if sw.combos < len(p.Combos) {
			values += " and the server's own"
		}
		errs = append(errs, SpecError{File: s.File, Line: lineOf(s.lines, sw.key), Key: sw.key,
			Msg: fmt.Sprintf("the study sweeps %s over %s, and instance %q is --target %s: dbrig cannot reconfigure your server (it never starts, stops, restarts or reconfigures a target), so run a copy of the study without this sweep", name, values, instance, instance)})
	}
	return errs
}

// compareServerSettings reads back each setting of the study's that only
// the server's configuration can set (session-level ones are applied to
// dbrig's own sessions) and lists those the target runs with another
// value.
func compareServerSettings(ctx context.Context, eng engine.Engine, inst engine.Instance, settings map[string]string) ([]SettingDiff, error) {
	_, server := eng.SplitSettings(ctx, settings)
	return readBackSettings(ctx, inst, server, func(name string, err error) error {
		return fmt.Errorf("target %q: read its setting %s to compare it with the study's: %w", inst.Name(), name, err)
	})
}

// readBackSettings reads each of settings back from inst, in name order, and
// returns those it runs with another value (Target holds the server's).
// A setting that cannot be read goes to unread: its error, if any, ends
// the read-back.
func readBackSettings(ctx context.Context, inst engine.Instance, settings map[string]string, unread func(name string, err error) error) ([]SettingDiff, error) {
	var diffs []SettingDiff
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		have, err := inst.Setting(ctx, name)
		if err != nil {
			if err := unread(name, err); err != nil {
				return nil, err
			}
			continue
		}
		if !topology.SameSetting(have, settings[name]) {
			diffs = append(diffs, SettingDiff{Name: name, Study: settings[name], Target: have})
		}
	}
	return diffs, nil
}

// targetSettingsWarning is the one warning of a run whose targets run
// with server settings of their own, or "" when none does.
func targetSettingsWarning(targets []TargetEnvironment) string {
	var parts []string
	for _, t := range targets {
		for _, d := range t.Differs {
			parts = append(parts, "target "+t.Name+" "+d.String())
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("the study's server settings differ from your server's, and dbrig never reconfigures a target, so the points run with the target's (recorded in %s and the report's environment): %s",
		EnvironmentFile, strings.Join(parts, "; "))
}

// builtinHint adds to a refusal of a built-in study's instances (their
// settings, sweeps and placement, which the user cannot edit in the
// binary) how to get the study's file to copy and edit.
func builtinHint(reg *Registry, spec *Spec, err error) error {
	var es SpecErrors
	b, ok := reg.Builtin(spec.Name)
	if !ok || b.Path != spec.File || !errors.As(err, &es) {
		return err
	}
	if !slices.ContainsFunc(es, func(e SpecError) bool { return strings.HasPrefix(e.Key, "instance.") }) {
		return err
	}
	return fmt.Errorf("%w\n%s is built in: `dbrig studies show %s > my-study.toml` prints its file; edit the copy and run `dbrig run my-study.toml`", err, spec.Name, spec.Name)
}
