package workspace

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Direct workspaces. A tool call used to cross four plugin hops: engine →
// host → toolpack → host → sandbox, the host relaying each of the
// toolpack's file calls to the sandbox plugin. A sandbox plugin also serves
// its workspaces on a unix socket of its own (sandbox.proto ServeDirect),
// and for each tool call the host grants the toolpack one sandbox until the
// call's deadline with a token signed by a key only it and that plugin
// process hold. The toolpack then talks to the sandbox itself: one hop
// fewer, and the host's CPU out of every file call.
//
// What the token guards: a process that can reach the socket (its folder
// is the host user's alone) but was not granted a sandbox cannot use one,
// and a grant names one sandbox and expires. The SDK's toolpack side also
// stops using a grant when its call returns, so a toolpack built on it
// reaches a workspace only while it is lent, as through the host.

// Direct is one grant of a sandbox plugin's own workspace service.
type Direct struct {
	// Address is the sandbox plugin's unix socket.
	Address string
	// WorkspaceID is the sandbox's id, the workspace id of every request.
	WorkspaceID string
	// Token is sent with every request (DirectTokenMetadata).
	Token string
}

// DirectTokenMetadata is the gRPC metadata key a direct request carries
// its token under.
const DirectTokenMetadata = "agenthost-workspace-token"

// DirectKeyBytes is the size of the key grants are signed with.
const DirectKeyBytes = 32

// SignDirect returns a token granting workspaceID until the time given,
// signed with key.
func SignDirect(key []byte, workspaceID string, until time.Time) string {
	payload := workspaceID + "\n" + strconv.FormatInt(until.UnixMilli(), 10)
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(directMAC(key, payload))
}

func directMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// errDirectDenied is every refusal of a token: which check failed is not
// the caller's business, and is the same answer for all.
var errDirectDenied = errors.New("no valid grant for this workspace")

// verifyDirect checks that token, signed with key, grants workspaceID at now.
func verifyDirect(key []byte, token, workspaceID string, now time.Time) error {
	if len(key) == 0 {
		return errDirectDenied
	}
	enc, sig, ok := strings.Cut(token, ".")
	if !ok {
		return errDirectDenied
	}
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return errDirectDenied
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, directMAC(key, string(payload))) {
		return errDirectDenied
	}
	id, until, ok := strings.Cut(string(payload), "\n")
	if !ok || id != workspaceID {
		return errDirectDenied
	}
	ms, err := strconv.ParseInt(until, 10, 64)
	if err != nil || now.UnixMilli() >= ms {
		return errDirectDenied
	}
	return nil
}

// DirectKey holds the key a sandbox plugin checks grants with; the host
// may replace it (ServeDirect again), so it is read on every request.
type DirectKey struct {
	key atomic.Pointer[[]byte]
}

// Set replaces the key.
func (k *DirectKey) Set(key []byte) {
	b := append([]byte(nil), key...)
	k.key.Store(&b)
}

func (k *DirectKey) get() []byte {
	if p := k.key.Load(); p != nil {
		return *p
	}
	return nil
}

// DirectResolver resolves a workspace id for the direct service: only for
// a request whose token key signed for that id, and then with inner.
func DirectResolver(key *DirectKey, inner Resolver) Resolver {
	return func(ctx context.Context, id string) (Workspace, error) {
		var token string
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if v := md.Get(DirectTokenMetadata); len(v) == 1 {
				token = v[0]
			}
		}
		if err := verifyDirect(key.get(), token, id, time.Now()); err != nil {
			return nil, plugin.Errorf(plugin.CodePermissionDenied, "workspace_id", "workspace %q: %v", id, err)
		}
		return inner(ctx, id)
	}
}

// DirectConns keeps one connection per sandbox plugin socket for a
// toolpack process. A socket a plugin process stopped serving stays
// dialled until more than maxDirectConns others are newer.
type DirectConns struct {
	mu    sync.Mutex
	conns []directConn // least recently used first
}

type directConn struct {
	address string
	conn    *grpc.ClientConn
}

// maxDirectConns bounds the sockets one toolpack keeps: a host runs a few
// sandbox plugins, each with one socket per process it launched.
const maxDirectConns = 8

// Open returns a Workspace that serves d's grant over its socket, and a
// release to call when the call it was granted for returns: from then on
// it refuses every call, as the host's lease would.
func (c *DirectConns) Open(d Direct) (Workspace, func(), error) {
	conn, err := c.conn(d.Address)
	if err != nil {
		return nil, nil, err
	}
	g := &grantConn{conn: conn, md: metadata.Pairs(DirectTokenMetadata, d.Token)}
	return NewClient(g, d.WorkspaceID), func() { g.released.Store(true) }, nil
}

func (c *DirectConns) conn(address string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, dc := range c.conns {
		if dc.address == address {
			c.conns = append(append(c.conns[:i:i], c.conns[i+1:]...), dc)
			return dc.conn, nil
		}
	}
	conn, err := grpc.NewClient("unix:"+address, append(plugin.GRPCDialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		return nil, err
	}
	c.conns = append(c.conns, directConn{address: address, conn: conn})
	if len(c.conns) > maxDirectConns {
		_ = c.conns[0].conn.Close()
		c.conns = c.conns[1:]
	}
	return conn, nil
}

// Close closes every connection.
func (c *DirectConns) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, dc := range c.conns {
		_ = dc.conn.Close()
	}
	c.conns = nil
}

// grantConn sends one grant's token with every call, until released.
type grantConn struct {
	conn     *grpc.ClientConn
	md       metadata.MD
	released atomic.Bool
}

func (g *grantConn) errReleased() error {
	return plugin.Errorf(plugin.CodePermissionDenied, "workspace_id", "the workspace was lent for a tool call that has returned")
}

func (g *grantConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if g.released.Load() {
		return g.errReleased()
	}
	return g.conn.Invoke(metadata.NewOutgoingContext(ctx, g.md), method, args, reply, opts...)
}

func (g *grantConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if g.released.Load() {
		return nil, g.errReleased()
	}
	return g.conn.NewStream(metadata.NewOutgoingContext(ctx, g.md), desc, method, opts...)
}
