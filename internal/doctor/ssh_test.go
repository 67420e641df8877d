package doctor

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/doctor/sshdtest"
)

// TestRemoteHostsOverSSH runs the collector through a real sshd on a
// loopback port. The remote host is this machine, so its checks must read
// exactly what the local checks read.
func TestRemoteHostsOverSSH(t *testing.T) {
	srv := sshdtest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ssh := SSH{ConfigFile: srv.ConfigFile}
	closed := sshdtest.ClosedPort(t)
	hosts := []Host{
		RemoteHost(Target{User: srv.User, Host: "127.0.0.1", Port: srv.Port}, ssh),
		RemoteHost(Target{User: srv.User, Host: "localhost", Port: srv.Port}, ssh),
		RemoteHost(Target{User: srv.User, Host: "127.0.0.1", Port: closed}, ssh),
		RemoteHost(Target{User: "nobody-dbrig", Host: "127.0.0.1", Port: srv.Port}, ssh),
	}
	links := mustLinks(t, "tukwila-dublin")
	rep := Run(ctx, hosts, Options{Links: links, Parallel: 2, Timeout: 20 * time.Second})
	local := checkSource(t, DirSource{Root: "/"}, links)

	for _, h := range rep.Hosts[:2] {
		if !h.Reachable || h.Error != "" {
			t.Fatalf("%s unreachable: %s\nsshd log:\n%s", h.Name, h.Error, srv.Log())
		}
		if h.Checks[0].ID != "host.reachable" || h.Checks[0].Status != Pass {
			t.Errorf("%s: first row %+v", h.Name, h.Checks[0])
		}
		remote := h
		remote.Checks = h.Checks[1:]
		sameRows(t, h.Name+" over ssh and local", withoutLoopDevices(rows(remote, "cpu.model")), withoutLoopDevices(rows(local, "cpu.model")))
	}
	for i, want := range []string{"Connection refused", "Permission denied"} {
		h := rep.Hosts[2+i]
		if h.Reachable || !strings.Contains(h.Error, want) || h.Status != Fail {
			t.Errorf("%s: reachable %v, status %s, error %q; want %q", h.Name, h.Reachable, h.Status, h.Error, want)
		}
		if len(h.Checks) != 1 || h.Checks[0].ID != "host.reachable" || h.Checks[0].Status != Fail || h.Checks[0].Fix == "" {
			t.Errorf("%s: rows %+v", h.Name, h.Checks)
		}
	}
	if rep.ExitCode != 1 || rep.Fleet == nil || len(rep.Fleet.Hosts) != 4 {
		t.Fatalf("exit %d, fleet %+v", rep.ExitCode, rep.Fleet)
	}
	var reach FleetCheck
	for _, c := range rep.Fleet.ByCheck {
		if c.ID == "host.reachable" {
			reach = c
		}
	}
	if len(reach.FailedOn) != 2 || reach.FailedOn[0] != hosts[2].Name {
		t.Errorf("fleet host.reachable %+v", reach)
	}
	if len(rep.Fleet.Checks) != 1 || rep.Fleet.Checks[0].Status != Pass {
		t.Errorf("fleet MTU across the two reachable hosts: %+v", rep.Fleet.Checks)
	}
}

// TestRemoteHostTimeout: a host that accepts the connection and never
// speaks is cut off at the per-host timeout, as a failed row.
func TestRemoteHostTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the listener closes
		}
	}()
	target := Target{Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port}
	start := time.Now()
	rep := Run(t.Context(), []Host{RemoteHost(target, SSH{ConfigFile: "/dev/null"})}, Options{Timeout: time.Second})
	h := rep.Hosts[0]
	if h.Reachable || h.Status != Fail || rep.ExitCode != 1 {
		t.Fatalf("silent host: %+v", h)
	}
	if !strings.Contains(h.Error, "within 1s") && !strings.Contains(h.Error, "timed out") {
		t.Errorf("error %q does not say the time ran out", h.Error)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s with a 1 s timeout", d)
	}
}

func TestSSHArgs(t *testing.T) {
	s := SSH{ConfigFile: "/etc/fleet.conf", Options: []string{"ConnectTimeout=3", "IdentityFile=/k"}}
	got := strings.Join(s.Args(Target{User: "pg", Host: "db1", Port: 2222}, 20*time.Second), " ")
	want := "-o BatchMode=yes -F /etc/fleet.conf -o ConnectTimeout=3 -o IdentityFile=/k -o ConnectTimeout=20 -o LogLevel=ERROR -T -p 2222 -l pg -- db1 sh -s"
	if got != want {
		t.Errorf("args\n got  %s\n want %s", got, want)
	}
}

// withoutLoopDevices leaves out the rows of loop devices: other tests and
// dbrig runs on this machine attach and detach theirs between the read over
// ssh and the local one (a read-ahead smoke run's loop1 was there for one
// and gone for the other), and this test made none of them.
func withoutLoopDevices(rs []row) []row {
	return slices.DeleteFunc(rs, func(r row) bool { return strings.HasPrefix(r.Subject, "loop") })
}
