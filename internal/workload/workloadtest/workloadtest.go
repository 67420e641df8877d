// Package workloadtest holds what the workload packages' tests share: the
// workload.Env the study runner gives a workload, over real servers the
// test started (pgtest, mariatest).
package workloadtest

import (
	"fmt"
	"log/slog"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/workload"
)

// Env is what the runner gives a workload: database db on the instances,
// each reached through its unix socket, and every instance as one set. A
// name the workload asks for is the instance of that name; with a single
// instance, any name is it (a test's instance is named after the test, the
// workload's parameters after the study's).
func Env(db string, insts ...engine.Instance) *workload.Env {
	env := TCPEnv(db, insts...)
	env.Conn = func(_, instance, db string) (workload.Endpoint, error) {
		c, ok := env.Instance(instance).UnixLogin(db)
		if !ok {
			return workload.Endpoint{}, fmt.Errorf("instance %s has no unix socket", instance)
		}
		return workload.Endpoint{Conn: c, Transport: "unix"}, nil
	}
	return env
}

// TCPEnv is Env with every instance reached over loopback TCP.
func TCPEnv(db string, insts ...engine.Instance) *workload.Env {
	by := map[string]engine.Instance{}
	var names []string
	for _, in := range insts {
		by[in.Name()] = in
		names = append(names, in.Name())
	}
	instance := func(name string) engine.Instance {
		if in, ok := by[name]; ok || len(insts) != 1 {
			return in
		}
		return insts[0]
	}
	return &workload.Env{
		Database:   db,
		ClientSite: "client",
		Log:        slog.New(slog.DiscardHandler),
		Instance:   instance,
		Engines:    enginetest.Registry(),
		Set:        func(string) []string { return names },
		Conn: func(_, name, db string) (workload.Endpoint, error) {
			return workload.Endpoint{Conn: instance(name).Login(db), Transport: "tcp"}, nil
		},
	}
}
