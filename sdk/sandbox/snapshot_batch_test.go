package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/pb/sandboxv1"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// scripted is a backend whose snapshots since a generation pass a fixed
// sequence of entries.
type scripted struct{ entries []SnapshotEntry }

func (s scripted) Info() plugin.Info                                { return plugin.Info{Name: "scripted"} }
func (s scripted) Create(context.Context, CreateSpec) (Info, error) { return Info{}, errors.New("no") }
func (s scripted) Get(context.Context, string) (Info, error)        { return Info{}, errors.New("no") }
func (s scripted) Stop(context.Context, string) error               { return nil }
func (s scripted) Workspace(context.Context, string) (workspace.Workspace, error) {
	return nil, errors.New("no")
}
func (s scripted) Snapshot(ctx context.Context, id string, exclude []string, emit func(SnapshotEntry) error) error {
	_, err := s.SnapshotSince(ctx, id, exclude, "", emit)
	return err
}
func (s scripted) SnapshotSince(_ context.Context, _ string, _ []string, _ string, emit func(SnapshotEntry) error) (string, error) {
	for _, e := range s.entries {
		if err := emit(e); err != nil {
			return "", err
		}
	}
	return "g2", nil
}

// unbatched is a backend's server as built before batch_unchanged: it
// sends a header per unchanged file whatever the caller asks.
type unbatched struct{ *server }

func (u unbatched) Snapshot(req *sandboxv1.SnapshotRequest, stream sandboxv1.Sandbox_SnapshotServer) error {
	req.BatchUnchanged = false
	return u.server.Snapshot(req, stream)
}

// serve runs srv on loopback and returns a client of it.
func serve(t *testing.T, srv sandboxv1.SandboxServer) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	sandboxv1.RegisterSandboxServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestSnapshotBatchesUnchangedFiles: files unchanged since a generation
// travel several to a message, in the snapshot's order among the files
// that changed and those left out; the client passes them one by one as
// before, from a backend that batches and from one that does not.
func TestSnapshotBatchesUnchangedFiles(t *testing.T) {
	var entries []SnapshotEntry
	unchanged := func(n int, prefix string) {
		for i := range n {
			entries = append(entries, SnapshotEntry{File: File{Path: fmt.Sprintf("%s/f%03d.ts", prefix, i), Mode: 0o644}, Size: int64(i), Unchanged: true, SHA256: fmt.Sprintf("%064d", i)})
		}
	}
	unchanged(300, "a")
	entries = append(entries, SnapshotEntry{File: File{Path: "b/changed.ts", Mode: 0o600, Data: []byte("new content")}, Size: 11})
	entries = append(entries, SnapshotEntry{File: File{Path: "b/link"}, LeftOut: "symlink"})
	unchanged(5, "c")
	impl := scripted{entries: entries}

	type seen struct {
		Path, SHA, LeftOut, Content string
		Mode                        uint32
		Size                        int64
		Unchanged                   bool
	}
	var want []seen
	for _, e := range entries {
		want = append(want, seen{Path: e.Path, SHA: e.SHA256, LeftOut: e.LeftOut, Content: string(e.Data), Mode: e.Mode, Size: e.Size, Unchanged: e.Unchanged})
	}
	for name, srv := range map[string]sandboxv1.SandboxServer{"batching": &server{impl: impl}, "unbatched": unbatched{&server{impl: impl}}} {
		t.Run(name, func(t *testing.T) {
			conn := serve(t, srv)
			c := &Client{conn: conn, c: sandboxv1.NewSandboxClient(conn)}
			var got []seen
			gen, err := c.SnapshotFrom(context.Background(), "sbx", SnapshotOptions{Since: "g1"}, func(f SnapshotFile) error {
				s := seen{Path: f.Path, SHA: f.SHA256, LeftOut: f.LeftOut, Mode: f.Mode, Size: f.Size, Unchanged: f.Unchanged}
				if f.Content != nil {
					b, err := io.ReadAll(f.Content)
					require.NoError(t, err)
					s.Content = string(b)
				}
				got = append(got, s)
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, "g2", gen)
			assert.Equal(t, want, got)
		})
	}

	// On the wire: 2 + 1 batches of unchanged files around the changed
	// file's header and data, the left-out path and the end.
	conn := serve(t, &server{impl: impl})
	kinds := onTheWire(t, conn, &sandboxv1.SnapshotRequest{SandboxId: "sbx", Since: "g1", BatchUnchanged: true})
	assert.Equal(t, []string{"unchanged×256", "unchanged×44", "file", "data", "left_out", "unchanged×5", "end"}, kinds)
}

// onTheWire sends req to the server behind conn and names each message of
// the snapshot it streams back, in order.
func onTheWire(t *testing.T, conn *grpc.ClientConn, req *sandboxv1.SnapshotRequest) []string {
	t.Helper()
	stream, err := sandboxv1.NewSandboxClient(conn).Snapshot(context.Background(), req)
	require.NoError(t, err)
	var kinds []string
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return kinds
		}
		require.NoError(t, err)
		switch m := msg.GetMsg().(type) {
		case *sandboxv1.SnapshotChunk_Unchanged:
			kinds = append(kinds, fmt.Sprintf("unchanged×%d", len(m.Unchanged.GetFiles())))
		case *sandboxv1.SnapshotChunk_Removed:
			kinds = append(kinds, fmt.Sprintf("removed×%d", len(m.Removed.GetPaths())))
		case *sandboxv1.SnapshotChunk_File:
			kinds = append(kinds, "file")
		case *sandboxv1.SnapshotChunk_Data:
			kinds = append(kinds, "data")
		case *sandboxv1.SnapshotChunk_LeftOut:
			kinds = append(kinds, "left_out")
		case *sandboxv1.SnapshotChunk_End:
			end := "end"
			if m.End.GetChangesOnly() {
				end += " changes_only=true"
			}
			if m.End.GetSettled() {
				end += " settled=true"
			}
			kinds = append(kinds, end)
		}
	}
}
