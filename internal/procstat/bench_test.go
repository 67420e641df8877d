package procstat

import (
	"os"
	"testing"
)

// BenchmarkTreeUsage reads this process's tree: every process's stat
// (to find the children), then the tree's CPU and I/O.
func BenchmarkTreeUsage(b *testing.B) {
	for b.Loop() {
		if _, err := TreeUsage(os.Getpid()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProcessMemory(b *testing.B) {
	for b.Loop() {
		if _, err := ProcessMemory(os.Getpid()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHostBusy(b *testing.B) {
	for b.Loop() {
		if _, err := HostBusy(); err != nil {
			b.Fatal(err)
		}
	}
}
