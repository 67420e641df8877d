package study

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/dbrig/dbrig/internal/doctor"
	"github.com/dbrig/dbrig/internal/engine"
)

// CheckBeforeStart is everything a plan must pass before dbrig starts
// anything: its server settings (CheckSettings) and what its instances ask
// of this machine (CheckHost).
func CheckBeforeStart(ctx context.Context, plan *Plan, engines *engine.Registry) error {
	if err := CheckSettings(ctx, plan, engines); err != nil {
		return err
	}
	return CheckHost(plan)
}

// CheckHost refuses, at the study file's line and key, an instance or a
// client that asks this machine for what it does not have: a CPU it lacks,
// a data_dir or wal_dir that is not a directory, a memory cap where no
// memory cgroup is writable. Otherwise the first point would fail after the run started.
// Targets are not checked: dbrig starts nothing for them.
func CheckHost(plan *Plan) error {
	spec := plan.Spec
	var errs SpecErrors
	seen := map[string]bool{}
	add := func(key, msg string) {
		if seen[key+msg] {
			return
		}
		seen[key+msg] = true
		errs = append(errs, SpecError{File: spec.File, Line: lineOf(spec.lines, key), Key: key, Msg: msg})
	}
	for _, c := range plan.Combos {
		for name, members := range c.Sets {
			i := slices.IndexFunc(spec.Instances, func(in InstanceSpec) bool { return in.Name == name })
			if i < 0 {
				continue
			}
			key := fmt.Sprintf("instance.%d", i)
			for _, in := range c.Instances {
				if !slices.Contains(members, in.Name) || in.Target != "" {
					continue
				}
				if _, remote := spec.Sites[in.Site]; remote {
					continue // checked by the engine on its host, when it starts
				}
				if in.CPUs != "" {
					if _, err := engine.CheckCPUs(in.CPUs); err != nil {
						add(key+".cpus", err.Error())
					}
				}
				for attr, dir := range map[string]string{"data_dir": in.DataDir, "wal_dir": in.WALDir} {
					if dir == "" {
						continue
					}
					if st, err := os.Stat(dir); err != nil {
						add(key+"."+attr, fmt.Sprintf("%s: %v (dbrig makes a directory of its own inside an existing one)", dir, errors.Unwrap(err)))
					} else if !st.IsDir() {
						add(key+"."+attr, fmt.Sprintf("%s is not a directory", dir))
					}
				}
				if in.Memory > 0 {
					if _, err := engine.MemoryCgroupSupport(); err != nil {
						add(key+".memory", err.Error())
					}
				}
			}
		}
	}
	checkClientCPUs(plan, add)
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return errs
}

// checkClientCPUs refuses a client pinned to a CPU this machine lacks: the
// client always runs here, in a process of its own that would fail to pin
// itself only once the first point's servers were up.
func checkClientCPUs(plan *Plan, add func(key, msg string)) {
	for _, c := range plan.Combos {
		if c.Client.CPUs == "" {
			continue
		}
		if _, err := engine.CheckCPUs(c.Client.CPUs); err != nil {
			add("client.cpus", err.Error())
		}
	}
}

// ParseHost reads a site's host: ssh://[user@]host[:port] or
// [user@]host[:port].
func ParseHost(s string) (doctor.Target, error) {
	if s == "" {
		return doctor.Target{}, errors.New("missing: ssh://[user@]host[:port]")
	}
	rest, _ := strings.CutPrefix(s, "ssh://")
	if strings.Contains(rest, "://") {
		return doctor.Target{}, fmt.Errorf("%q: want ssh://[user@]host[:port]", s)
	}
	t, err := doctor.ParseTarget(strings.TrimSuffix(rest, "/"))
	if err != nil {
		return t, fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}

// PlaceSite places a site on a host, as [site.NAME] host = "..." does (the
// command line's --host SITE=ssh://user@host): the spec's own placement of
// that site, if any, is replaced.
func (s *Spec) PlaceSite(site, host string) error {
	if !slices.ContainsFunc(s.Instances, func(in InstanceSpec) bool { return in.Site == site }) {
		if site == s.Client.Site {
			return fmt.Errorf("--host %s=%s: %q holds only the client, which runs in dbrig's process (spread a load over hosts with --agents)", site, host, site)
		}
		return fmt.Errorf("--host %s=%s: the study has no site %q with instances", site, host, site)
	}
	if _, err := ParseHost(host); err != nil {
		return fmt.Errorf("--host %s=%s: %w", site, host, err)
	}
	if s.Sites == nil {
		s.Sites = map[string]SiteSpec{}
	}
	s.Sites[site] = SiteSpec{Host: host}
	return nil
}
