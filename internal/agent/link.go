package agent

import (
	"context"
	"fmt"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/topology"
)

// Path is how a point's users reach the server from the agents' hosts:
// the login at the server's own address, and the emulated link each agent
// runs in front of its users when the point has one (nil: none).
type Path struct {
	Login engine.Conn
	Link  *JobLink
}

// JobLink is the emulated link an agent runs in its own process, listening
// on its own loopback: the link's model belongs between the users and the
// server, and the coordinator's loopback is out of the agents' reach.
type JobLink struct {
	// Name is the study's name of the link, under which the point reports
	// what it carried.
	Name     string      `json:"name"`
	Config   link.Config `json:"config"`
	Upstream string      `json:"upstream"`
}

// PathOf is the agents' path for the users' login, which the point reached
// as ep: over a link, the login goes to the server's own address and each
// agent runs the link; otherwise the login is the agents' as it is.
func PathOf(login engine.Conn, ep topology.Endpoint) (Path, error) {
	if ep.Transport != "link" {
		return Path{Login: login}, nil
	}
	direct, err := login.Via(ep.Upstream)
	if err != nil {
		return Path{}, fmt.Errorf("link %s: the server's own address: %w", ep.Link, err)
	}
	return Path{Login: direct, Link: &JobLink{Name: ep.Link, Config: ep.LinkConfig, Upstream: ep.Upstream}}, nil
}

// forAgent is the link as agent i runs it: with a seed of its own (when
// the study fixed one), so that no two agents lose or delay the same
// segments.
func (l *JobLink) forAgent(i int) *JobLink {
	if l == nil {
		return nil
	}
	own := *l
	if own.Config.Seed != 0 {
		own.Config.Seed += int64(i) * 0x9E3779B9
	}
	return &own
}

// listen starts the link in front of this agent's users: their login goes
// through it.
func (l *JobLink) listen(ctx context.Context, login engine.Conn) (*link.Proxy, engine.Conn, error) {
	p, err := link.Listen(ctx, "127.0.0.1:0", l.Upstream, l.Config)
	if err != nil {
		return nil, engine.Conn{}, fmt.Errorf("link %s to %s: %w", l.Name, l.Upstream, err)
	}
	through, err := login.Via(p.Addr())
	if err != nil {
		_ = p.Close()
		return nil, engine.Conn{}, err
	}
	return p, through, nil
}

// mergeLinks sums what the agents' links carried (nil when none ran one).
func mergeLinks(stats []*link.Stats) *link.Stats {
	var out *link.Stats
	for _, s := range stats {
		if s == nil {
			continue
		}
		if out == nil {
			out = &link.Stats{}
		}
		*out = topology.MergeStats(*out, *s)
	}
	return out
}

// Carried is what the agents' links carried, by the link's name, as a
// workload's Measurement reports it (nil when path had no link).
func (o *LoadOutcome) Carried(path Path) map[string]link.Stats {
	if path.Link == nil || o.Link == nil {
		return nil
	}
	return map[string]link.Stats{path.Link.Name: *o.Link}
}
