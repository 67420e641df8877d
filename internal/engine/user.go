package engine

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// ServerUser is the operating-system account a server process runs as.
type ServerUser struct {
	Name     string
	UID, GID uint32
	// Switch is true when dbrig runs as root and must drop to this account
	// (initdb and mysqld refuse to run as root).
	Switch bool
}

// Credential returns the process credential to start a server with, or nil
// when no switch is needed.
func (u ServerUser) Credential() *syscall.Credential {
	if !u.Switch {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID}
}

// Chown gives a path to the server user (a no-op without a switch).
func (u ServerUser) Chown(path string) error {
	if !u.Switch {
		return nil
	}
	if err := os.Chown(path, int(u.UID), int(u.GID)); err != nil {
		return fmt.Errorf("give %s to user %s: %w", path, u.Name, err)
	}
	return nil
}

// DefaultServerAccount is the account dbrig creates when it runs as root and
// finds none of the candidates.
const DefaultServerAccount = "dbrig"

var serverUser struct {
	sync.Mutex
	u   *ServerUser
	err error
}

// FindServerUser returns the account servers run as. As a normal user that
// is the user itself. As root it is the first of "postgres" (created by
// Debian's PostgreSQL packages) and "dbrig" that exists; if neither does,
// dbrig creates the system account "dbrig" with useradd.
func FindServerUser() (ServerUser, error) {
	if os.Geteuid() != 0 {
		cur, err := user.Current()
		if err != nil {
			return ServerUser{}, fmt.Errorf("look up the current user: %w", err)
		}
		return ServerUser{Name: cur.Username, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}, nil
	}
	serverUser.Lock()
	defer serverUser.Unlock()
	if serverUser.u != nil || serverUser.err != nil {
		if serverUser.u == nil {
			return ServerUser{}, serverUser.err
		}
		return *serverUser.u, nil
	}
	u, err := lookupOrCreate()
	serverUser.u, serverUser.err = u, err
	if u == nil {
		return ServerUser{}, err
	}
	return *u, nil
}

func lookupOrCreate() (*ServerUser, error) {
	for _, name := range []string{"postgres", DefaultServerAccount} {
		if u, err := lookup(name); err == nil {
			return u, nil
		}
	}
	out, err := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
		"--shell", "/usr/sbin/nologin", DefaultServerAccount).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("dbrig runs as root and database servers refuse to: create the unprivileged account %q with useradd: %v: %s",
			DefaultServerAccount, err, out)
	}
	return lookup(DefaultServerAccount)
}

func lookup(name string) (*ServerUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &ServerUser{Name: name, UID: uint32(uid), GID: uint32(gid), Switch: true}, nil
}

// CheckReachable reports an error when the server user cannot enter dir,
// because an ancestor directory is closed to it (a 0700 directory of root's,
// for instance).
func (u ServerUser) CheckReachable(dir string) error {
	if !u.Switch {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if ok && sys.Uid != u.UID && st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("the server account %q cannot enter %s (mode %o, owner uid %d): use a directory it can reach, such as /tmp",
				u.Name, p, st.Mode().Perm(), sys.Uid)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// ChownFile gives an open file to the server user (a no-op without a
// switch): unlike Chown, a link put in the file's place cannot send it
// elsewhere.
func (u ServerUser) ChownFile(f *os.File) error {
	if !u.Switch {
		return nil
	}
	if err := f.Chown(int(u.UID), int(u.GID)); err != nil {
		return fmt.Errorf("give %s to user %s: %w", f.Name(), u.Name, err)
	}
	return nil
}
