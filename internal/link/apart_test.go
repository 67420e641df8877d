package link

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/idleloop"
)

// linkApartEnv names the upstream of a link that this test binary, started
// again by startLinkApart, runs in a process of its own.
const linkApartEnv = "DBRIG_LINK_APART_UPSTREAM"

// TestLinkApartProcess is the body of that process, not a test: it runs an
// unimpaired link to the upstream, prints its address and serves until its
// standard input closes (its parent ended or stopped it).
func TestLinkApartProcess(t *testing.T) {
	upstream := os.Getenv(linkApartEnv)
	if upstream == "" {
		t.Skip("the body of the link's own process in BenchmarkProxyVsDirect")
	}
	p, err := Listen(context.Background(), "127.0.0.1:0", upstream, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fmt.Println("link", p.Addr())
	io.Copy(io.Discard, os.Stdin)
}

// startLinkApart runs an unimpaired link to upstream in a process of its
// own, as a study runs the link in dbrig's process and the client and the
// server in theirs: a message then wakes a process that was waiting, which
// a link inside the benchmark's own busy process never does. The process
// ends with the benchmark.
func startLinkApart(b *testing.B, upstream string) string {
	b.Helper()
	return startTestProcess(b, "TestLinkApartProcess", linkApartEnv+"="+upstream, "link")
}

// startTestProcess runs this test binary again with only the test named
// run and env added to its environment, as a process of its own that
// serves until its standard input closes, and returns the address it
// prints on its first line after the word tag. The process ends with the
// benchmark.
func startTestProcess(b *testing.B, run, env, tag string) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+run+"$", "-test.count", "1")
	cmd.Env = append(os.Environ(), env)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("the %s process: %v", tag, err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), tag+" ")
	if err != nil || !ok {
		b.Fatalf("the %s process said %q (%v)", tag, line, err)
	}
	go io.Copy(io.Discard, stdout) // what go test prints as the process ends
	return addr
}

// keepCPUsAwake runs, for the rest of the benchmark, dbrig's idle loops
// (internal/idleloop: one busy loop pinned to each CPU, at SCHED_IDLE in a
// cgroup at cpu.idle 1, so that it runs only when nothing else wants the
// CPU), so that no virtual CPU halts while it idles: on a guest that halts
// at once, each wake-up of a halted vCPU goes through the hypervisor, and
// the link apart pays that at every hop. The loops die with the benchmark
// and are stopped by its cleanup.
func keepCPUsAwake(b *testing.B) {
	b.Helper()
	loops, err := idleloop.Start(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = loops.Stop() })
}
