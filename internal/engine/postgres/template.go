package postgres

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
)

// A template is the data directory initdb makes, held in memory: the first
// Start of a process for given binaries and server account runs initdb once,
// in a scratch directory removed at once, and every Start writes the image
// into its own data directory, then gives the superuser its own password in
// single-user mode. initdb costs 0.52 s of CPU, the copy and the single-user
// run a fraction of it (docs/engines.md). The template holds no password
// anyone uses: initdb's is random and forgotten, and every copy's is
// replaced before its server listens.
type template struct {
	// lock is held by the Start making the image; a channel so a waiting
	// Start can give up with its context.
	lock  chan struct{}
	image *engine.DirImage
	// conf is initdb's postgresql.conf (the limits and locale it chose),
	// read when the image was made; each copy gets it from here whatever
	// the image holds.
	conf []byte
}

type templateKey struct {
	binDir, version string
	uid             uint32
}

var templates struct {
	sync.Mutex
	m map[templateKey]*template
}

// templateFor returns the image for these binaries and server account,
// making it if no Start of this process has. A failure is not kept: the
// next Start tries again.
func templateFor(ctx context.Context, bin Binaries, user engine.ServerUser) (*template, error) {
	key := templateKey{bin.Dir, bin.Version, user.UID}
	templates.Lock()
	if templates.m == nil {
		templates.m = map[templateKey]*template{}
	}
	t := templates.m[key]
	if t == nil {
		t = &template{lock: make(chan struct{}, 1)}
		templates.m[key] = t
	}
	templates.Unlock()
	select {
	case t.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the data directory template: %w", context.Cause(ctx))
	}
	defer func() { <-t.lock }()
	if t.image == nil {
		image, conf, err := makeTemplate(ctx, bin, user)
		if err != nil {
			return nil, err
		}
		t.image, t.conf = image, conf
	}
	return t, nil
}

// makeTemplate runs initdb, with a random password it forgets, in a 0700
// scratch directory of the server account's, reads the data directory
// into memory and removes the scratch directory, whatever happens.
func makeTemplate(ctx context.Context, bin Binaries, user engine.ServerUser) (*engine.DirImage, []byte, error) {
	parent := os.TempDir()
	RemoveStale(parent)
	dir, err := os.MkdirTemp(parent, "dbrig-pgtmpl-")
	if err != nil {
		return nil, nil, fmt.Errorf("create the template directory: %w", err)
	}
	defer os.RemoveAll(dir)
	// Recorded first, so that a later run removes the directory of a dbrig
	// killed while initdb runs in it.
	if err := engine.WriteOwner(dir); err != nil {
		return nil, nil, fmt.Errorf("record the template directory's owner: %w", err)
	}
	if err := user.Chown(dir); err != nil {
		return nil, nil, err
	}
	throwaway, err := newPassword()
	if err != nil {
		return nil, nil, err
	}
	data := filepath.Join(dir, "data")
	if err := runInitdb(ctx, bin, user, dir, data, throwaway); err != nil {
		return nil, nil, err
	}
	image, err := engine.ReadDirImage(data)
	if err != nil {
		return nil, nil, err
	}
	conf, err := os.ReadFile(filepath.Join(data, "postgresql.conf"))
	if err != nil {
		return nil, nil, err
	}
	return image, conf, nil
}

func newPassword() (string, error) {
	pw := make([]byte, 24)
	if _, err := rand.Read(pw); err != nil {
		return "", fmt.Errorf("make a password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(pw), nil
}

// hbaConf admits the superuser's password (scram-sha-256) on the unix
// socket and loopback only, for sessions and replication, as initdb
// --auth scram-sha-256 writes it.
const hbaConf = `# written by dbrig
local   all             all                                     scram-sha-256
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
local   replication     all                                     scram-sha-256
host    replication     all             127.0.0.1/32            scram-sha-256
host    replication     all             ::1/128                 scram-sha-256
`

// copyTemplate writes the template into the instance's data directory (its
// WAL apart when asked), then every configuration file the server reads,
// from dbrig's own values rather than the image's, and gives the superuser
// the instance's password.
func (i *Instance) copyTemplate(ctx context.Context, t *template) error {
	var apart map[string]string
	if i.walDir != "" {
		apart = map[string]string{"pg_wal": filepath.Join(i.walDir, "pg_wal")}
	}
	if err := t.image.Write(i.dataDir, i.user, apart); err != nil {
		return fmt.Errorf("copy the data directory template to %s: %w", i.dataDir, err)
	}
	files := map[string][]byte{
		"postgresql.conf":      t.conf,
		"postgresql.auto.conf": []byte("# Do not edit this file manually!\n# It will be overwritten by the ALTER SYSTEM command.\n"),
		"pg_hba.conf":          []byte(hbaConf),
		"pg_ident.conf":        []byte("# written by dbrig: no maps\n"),
	}
	for name, content := range files {
		path := filepath.Join(i.dataDir, name)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			return err
		}
		if err := i.user.Chown(path); err != nil {
			return err
		}
	}
	return i.setPassword(ctx)
}

// setPassword stores the instance's password, as a SCRAM verifier, in
// single-user mode, before the server listens. The statement goes on
// stdin: it is on no command line, in no file and in no log (single-user
// mode echoes a failed statement to its stderr, which is kept only with
// the verifier cut out). The password itself never leaves dbrig.
func (i *Instance) setPassword(ctx context.Context) error {
	verifier, err := scramVerifier(i.password)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, i.bin.Path("postgres"), "--single", "-F", "-D", i.dataDir, "postgres")
	cmd.Dir = i.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: i.user.Credential()}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader("ALTER ROLE " + SuperUser + " PASSWORD '" + verifier + "'\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := engine.Start(cmd); err != nil {
		return fmt.Errorf("start %s --single: %w", i.bin.Path("postgres"), err)
	}
	err = cmd.Wait()
	said := strings.ReplaceAll(out.String(), verifier, "[verifier]")
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("set the password in single-user mode: stopped: %w", context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("set the password in single-user mode in %s: %w: %s", i.dataDir, err, lastLines(said, 5))
	case strings.Contains(said, "ERROR"):
		return fmt.Errorf("set the password in single-user mode in %s: %s", i.dataDir, lastLines(said, 5))
	}
	return nil
}

// scramIterations is PostgreSQL's scram_iterations default, which a
// server's own ALTER ROLE ... PASSWORD would use.
const scramIterations = 4096

// scramVerifier is what PostgreSQL stores for a scram-sha-256 password
// (RFC 5802, RFC 7677): the server takes a verifier given to ALTER ROLE as
// it is.
func scramVerifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("make a salt: %w", err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, scramIterations, sha256.Size)
	if err != nil {
		return "", err
	}
	mac := func(msg string) []byte {
		h := hmac.New(sha256.New, salted)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac("Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, b64(salt), b64(stored[:]), b64(mac("Server Key"))), nil
}
