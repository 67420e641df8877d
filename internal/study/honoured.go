package study

import (
	"context"
	"fmt"
	"strings"

	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
)

// A server can accept a setting and run with another value: MariaDB
// 10.11 keeps innodb_log_buffer_size at its redo log's size when that log
// is on a tmpfs, and rounds innodb_buffer_pool_size up to whole chunks. A
// point measured on such a server measures the server's value, not the
// study's; so each server a point starts or reconfigures is read back, and
// every point on a server that runs a setting of the study's with another
// value says so.

// settingsTaken reads back, on each of the point's own servers that the
// topology just started or reconfigured, every setting the study gives it,
// and keeps in st those the server runs with another value; a setting the
// server cannot show (an option that is no variable, such as MariaDB's
// skip_log_bin) is not compared.
func (r *Runner) settingsTaken(ctx context.Context, st *runState, c *Combo, changes map[string]topology.Change) {
	for _, cfg := range c.Instances {
		ch := changes[cfg.Name]
		if cfg.Target != "" || (ch != topology.Started && ch != topology.Reloaded && ch != topology.Restarted) {
			continue
		}
		inst := st.topo.Instance(cfg.Name)
		if inst == nil {
			continue
		}
		read, _ := readBackSettings(ctx, inst, cfg.Settings, func(name string, err error) error {
			r.Log.Debug("a study's setting not read back", "instance", cfg.Name, "setting", name, "err", err)
			return nil
		})
		var diffs []string
		for _, d := range read {
			diffs = append(diffs, fmt.Sprintf("%s = %s where the study set %s", d.Name, d.Target, d.Study))
		}
		st.untaken[cfg.Name] = diffs
		for _, d := range diffs {
			if !st.warned[cfg.Name+"/"+d] {
				r.Log.Warn("a server runs a setting of the study's with another value: its points measure the server's", "instance", cfg.Name, "setting", d)
				st.warned[cfg.Name+"/"+d] = true
			}
		}
	}
}

// qualify adds to a measured point on servers that run settings of the
// study's with other values the warning that says so.
func (st *runState) qualify(res *workload.Result, c *Combo) {
	var parts []string
	for _, cfg := range c.Instances {
		for _, d := range st.untaken[cfg.Name] {
			parts = append(parts, cfg.Name+" runs "+d)
		}
	}
	if len(parts) > 0 {
		res.Warnings = append(res.Warnings, "the server did not take the study's setting ("+strings.Join(parts, "; ")+"): the point measured the server's value")
	}
}
