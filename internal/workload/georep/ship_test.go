package georep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/link"
)

// TestShipperCarriesTheArchiveWhole: what the shipper delivers at the far
// site is byte for byte what it was given, across an emulated WAN, and the
// link carried it compressed.
func TestShipperCarriesTheArchiveWhole(t *testing.T) {
	t.Parallel()
	wan := link.Config{RTT: 20 * time.Millisecond, Rate: 1e9, Window: link.AutotunedWindow}
	var proxies []*link.Proxy
	via := func(ctx context.Context, from, to, upstream string) (string, error) {
		p, err := link.Listen(ctx, "127.0.0.1:0", upstream, wan)
		if err != nil {
			return "", err
		}
		proxies = append(proxies, p)
		return p.Addr(), nil
	}
	t.Cleanup(func() {
		for _, p := range proxies {
			p.Close()
		}
	})
	var data bytes.Buffer
	for i := 0; data.Len() < 8<<20; i++ {
		fmt.Fprintf(&data, "%08d:%x\n", i, sha256.Sum256([]byte(fmt.Sprint(i%97))))
	}
	want := sha256.Sum256(data.Bytes())
	ctx := testCtx(t, 2*time.Minute)
	for i := 0; i < 10; i++ {
		s := &shipper{via: via, from: "a", to: "b"}
		r, err := s.carry(ctx, bytes.NewReader(data.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got := [32]byte(h.Sum(nil)); got != want || n != int64(data.Len()) {
			t.Fatalf("run %d: %d bytes arrived of %d, or they differ", i, n, data.Len())
		}
		if s.Shipped() <= 0 || s.Shipped() >= int64(data.Len())/2 {
			t.Errorf("run %d: %d bytes shipped for %d: not compressed", i, s.Shipped(), data.Len())
		}
	}
}
