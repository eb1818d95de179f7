//go:build !linux

package api_test

import (
	"context"
	"net"
)

// netnsDial: only Linux has network namespaces; the server is reached
// directly.
func netnsDial(int) func(ctx context.Context, network, addr string) (net.Conn, error) { return nil }
