package oltp

import (
	"context"
	"testing"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// TestMariaDBSessionInterruptedByTheEndClosesCleanly: the run's end
// (its context) shuts a session's socket down; the session's Close, which
// then cannot send its goodbye, is no error of the run. The load runner
// cancels that context before it closes the workers, so the two race:
// 'close worker 0: bad connection' failed make test and make bench-oltp
// now and then.
func TestMariaDBSessionInterruptedByTheEndClosesCleanly(t *testing.T) {
	t.Parallel()
	inst := mariatest.Start(t, "close", nil)
	const db = "closing"
	if err := inst.CreateDatabase(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	login, _ := inst.UnixLogin(db)
	a, err := openAdmin(t.Context(), login)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	if err := createSchema(t.Context(), a, inst.Engine(), 0.01, nil); err != nil {
		t.Fatal(err)
	}
	s, err := openMaria(t.Context(), login)
	if err != nil {
		t.Fatal(err)
	}
	ms := s.(*mariaSession)
	// The end lands after the statements were closed and before the
	// connection is: the order in which the race failed.
	for i, st := range ms.stmts {
		if st != nil {
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			ms.stmts[i] = nil
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	ms.watch(ctx)
	cancel()
	// The server sends nothing unasked: the read returns once the
	// watch has shut the socket down.
	if _, err := ms.netc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the socket still reads after the run's end")
	}
	if err := ms.close(); err != nil {
		t.Errorf("close after the run's end: %v", err)
	}
}
