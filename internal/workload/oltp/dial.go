package oltp

import (
	"context"
	"net"
	"os"

	"github.com/dbrig/dbrig/internal/blockconn"
)

func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if os.Getenv("DBRIG_NETPOLL") != "" {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return blockconn.Dial(ctx, network, addr)
}
