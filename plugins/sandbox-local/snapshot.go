package local

import (
	"context"

	"github.com/agenthost/agenthost/sdk/sandbox"
)

// Snapshot streams the working copy: regular files in path order, symlinks
// and unstorable names reported as left out, without what exclude matches
// (excluded folders are not walked).
func (p *Provider) Snapshot(ctx context.Context, id string, exclude []string, emit func(sandbox.SnapshotEntry) error) error {
	b, err := p.lookup(id)
	if err != nil {
		return err
	}
	return b.fs.Files(ctx, sandbox.NewExcluder(exclude).Match, emit)
}

// SnapshotSince is Snapshot sending only the files changed since
// generation since (sandbox.ChangeTracker; see dirfs.FS.FilesSince). A
// rediscovered sandbox knows no generation: its first snapshot is whole.
func (p *Provider) SnapshotSince(ctx context.Context, id string, exclude []string, since string, emit func(sandbox.SnapshotEntry) error) (string, error) {
	b, err := p.lookup(id)
	if err != nil {
		return "", err
	}
	return b.fs.FilesSince(ctx, since, sandbox.NewExcluder(exclude).Match, emit)
}

// SnapshotChanges is SnapshotSince passing only what changed since
// generation since, and the files gone since (sandbox.ChangeLister; see
// dirfs.FS.FilesChanged).
func (p *Provider) SnapshotChanges(ctx context.Context, id string, exclude []string, since string, emit func(sandbox.SnapshotEntry) error) (string, bool, error) {
	b, err := p.lookup(id)
	if err != nil {
		return "", false, err
	}
	return b.fs.FilesChanged(ctx, since, sandbox.NewExcluder(exclude).Match, emit)
}

// Settled reports whether the snapshot of sandbox id that returned
// generation began with nothing running in it (sandbox.Settler; see
// dirfs.FS.Settled). An unknown sandbox is not settled.
func (p *Provider) Settled(id, generation string) bool {
	b, err := p.lookup(id)
	if err != nil {
		return false
	}
	return b.fs.Settled(generation)
}
