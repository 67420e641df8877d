package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dbrig/dbrig/internal/engine"
)

// Site runs a study site's instances on the host of an agent: it starts
// them there and stands for each in the coordinator as an engine.Instance.
// The servers listen on that host's loopback and are exposed at the host's
// address by the agent (see relay), so the network between the sites is
// the real one.
type Site struct {
	Agent *Agent
	// Keep leaves the instances' directories on the host.
	Keep bool
}

// Start starts an instance at the agent's host.
func (s *Site) Start(ctx context.Context, cfg engine.InstanceConfig, opts engine.StartOptions) (engine.Instance, error) {
	rep, err := s.Agent.call(ctx, Op{Name: "start", Instance: cfg.Name, Config: cfg, Keep: s.Keep || opts.Keep})
	if err != nil {
		return nil, fmt.Errorf("start %s instance %q on %s: %w", cfg.Engine, cfg.Name, s.Agent.Name, err)
	}
	if rep.Started == nil {
		return nil, fmt.Errorf("start instance %q on %s: the agent said nothing of it", cfg.Name, s.Agent.Name)
	}
	return &remoteInstance{agent: s.Agent, cfg: cfg, st: *rep.Started, exited: make(chan struct{})}, nil
}

// remoteInstance is an instance an agent runs on its host.
type remoteInstance struct {
	agent   *Agent
	cfg     engine.InstanceConfig
	st      StartedServer
	stopped sync.Once
	stopErr error
	exited  chan struct{}
}

var (
	_ engine.Instance  = (*remoteInstance)(nil)
	_ engine.Monitored = (*remoteInstance)(nil)
)

func (r *remoteInstance) Name() string    { return r.cfg.Name }
func (r *remoteInstance) Engine() string  { return r.cfg.Engine }
func (r *remoteInstance) Version() string { return r.st.Version }

// Owned: dbrig started it (on another host), so it may reconfigure and stop
// it.
func (r *remoteInstance) Owned() bool { return true }

func (r *remoteInstance) Login(db string) engine.Conn { return r.st.Login.Open().WithDatabase(db) }

// UnixLogin: the socket is on the other host.
func (r *remoteInstance) UnixLogin(string) (engine.Conn, bool) { return engine.Conn{}, false }

func (r *remoteInstance) MonitorLogin(db string) (engine.Conn, bool) {
	if !r.st.MonitorOK {
		return engine.Conn{}, false
	}
	return r.st.Monitor.Open().WithDatabase(db), true
}

func (r *remoteInstance) op(ctx context.Context, op Op) (Reply, error) {
	op.Instance = r.cfg.Name
	rep, err := r.agent.call(ctx, op)
	if err != nil {
		return rep, fmt.Errorf("instance %q on %s: %w", r.cfg.Name, r.agent.Name, err)
	}
	return rep, nil
}

func (r *remoteInstance) CreateDatabase(ctx context.Context, name string) error {
	_, err := r.op(ctx, Op{Name: "create_db", Database: name})
	return err
}

func (r *remoteInstance) DropDatabase(ctx context.Context, name string) error {
	_, err := r.op(ctx, Op{Name: "drop_db", Database: name})
	return err
}

func (r *remoteInstance) Exec(ctx context.Context, db string, sql ...string) error {
	_, err := r.op(ctx, Op{Name: "exec", Database: db, SQL: sql})
	return err
}

func (r *remoteInstance) Setting(ctx context.Context, name string) (string, error) {
	rep, err := r.op(ctx, Op{Name: "setting", Setting: name})
	return rep.Value, err
}

func (r *remoteInstance) Reconfigure(ctx context.Context, settings map[string]string) (bool, error) {
	rep, err := r.op(ctx, Op{Name: "reconfigure", Settings: settings})
	return rep.Restarted, err
}

// Stop stops the server on its host. When the agent's channel is gone the
// agent has stopped it already (an agent stops its servers when its
// coordinator vanishes).
func (r *remoteInstance) Stop(ctx context.Context) error {
	r.stopped.Do(func() {
		_, err := r.op(ctx, Op{Name: "stop"})
		if err != nil && (errors.Is(err, ErrLost) || r.agent.Err() != nil) {
			err = nil
		}
		r.stopErr = err
		close(r.exited)
	})
	return r.stopErr
}

func (r *remoteInstance) Exited() <-chan struct{} { return r.exited }

// PID is 0: the process is on another host (so the monitor reads no CPU of
// it here).
func (r *remoteInstance) PID() int { return 0 }

// LogPath is the log's path on the agent's host.
func (r *remoteInstance) LogPath() string {
	if r.st.LogPath == "" {
		return ""
	}
	return r.agent.Name + ":" + r.st.LogPath
}
