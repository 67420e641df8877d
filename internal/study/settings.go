package study

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// CheckSettings validates every server setting of a plan with each engine's
// own catalogue and parser, before anything starts: a misspelt name or a
// bad value is a SpecError at the file, line and key where it is written,
// with the closest valid name. Targets' settings are checked the same way
// (their server-level values are compared with the target's when it is
// attached).
func CheckSettings(ctx context.Context, plan *Plan, engines *engine.Registry) error {
	spec := plan.Spec
	type group struct {
		engine   string
		settings map[string]string
		combo    *Combo
		instance string
	}
	var groups []group
	seen := map[string]bool{}
	for _, c := range plan.Combos {
		for _, in := range c.Instances {
			if len(in.Settings) == 0 {
				continue
			}
			id := in.Engine + "\x00" + fmt.Sprint(sortedPairs(in.Settings))
			if seen[id] {
				continue
			}
			seen[id] = true
			groups = append(groups, group{engine: in.Engine, settings: in.Settings, combo: c, instance: in.Name})
		}
	}
	var errs SpecErrors
	reported := map[string]bool{}
	for _, g := range groups {
		e, ok := engines.Lookup(g.engine)
		if !ok {
			continue // refused by the validator
		}
		for _, err := range e.CheckSettings(ctx, g.settings) {
			var se *engine.SettingError
			if !errors.As(err, &se) {
				return fmt.Errorf("check the settings of %s: %w", e.Title(), err)
			}
			key := g.combo.SettingKey(g.instance, se.Key)
			msg := se.Error()
			if !strings.Contains(msg, e.Title()) {
				msg += " (" + e.Title() + ")"
			}
			if se.Value != "" && !se.NameRefused && !strings.Contains(msg, se.Value) {
				msg = fmt.Sprintf("%q: %s", se.Value, msg)
			}
			id := key + msg
			if reported[id] {
				continue
			}
			reported[id] = true
			errs = append(errs, SpecError{File: spec.File, Line: lineOf(spec.lines, key), Key: key, Msg: msg})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return errs
}

// checkStudySettings refuses, at the key where it is written, a setting a
// study may not vary on the engine a point runs (the engine's
// StudySetting, which needs no server) and a value with a control
// character. It runs for every point of the plan, when the file is parsed
// and again with --engine and --target, so every way in (dbrig run, dbrig
// load's study files, --resume's saved spec.toml) meets it before
// anything starts.
func (s *Spec) checkStudySettings(eng string, settings, keys map[string]string, fail func(string, error)) {
	e, ok := s.engines.Lookup(eng)
	if !ok {
		return // an unknown engine is refused at its own key
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if err := e.StudySetting(k); err != nil {
			fail(keys[k], err)
		}
		if err := engine.CheckSettingValue(eng, k, settings[k]); err != nil {
			fail(keys[k], err)
		}
	}
}

func sortedPairs(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
