package patch

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/plugins/toolpack-patch/internal/diffpatch"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// rollbackTimeout bounds putting files back after a failed write. It runs
// even when the call was cancelled: half a patch must not stay behind.
const rollbackTimeout = 30 * time.Second

// original is a file as it was before the patch touched it.
type original struct {
	exists bool
	data   []byte
	mode   uint32
}

// writeAll makes changes in order. If one fails, every path written so far is
// put back as it was (recreated, rewritten or removed), so the workspace ends
// as it began; the first error is returned.
func writeAll(ctx context.Context, ws workspace.Workspace, changes []diffpatch.Change, originals map[string]original) error {
	var touched []string
	touch := func(p string) { touched = append(touched, p) }
	var err error
	for _, c := range changes {
		switch c.Op {
		case diffpatch.OpDelete:
			touch(c.Path)
			err = ws.Remove(ctx, c.Path, false)
		case diffpatch.OpRename:
			touch(c.Path)
			if _, err = ws.WriteFile(ctx, c.Path, c.Content, originals[c.OldPath].mode); err == nil {
				touch(c.OldPath)
				err = ws.Remove(ctx, c.OldPath, false)
			}
		default:
			touch(c.Path)
			_, err = ws.WriteFile(ctx, c.Path, c.Content, originals[c.Path].mode)
		}
		if err != nil {
			rollback(ctx, ws, touched, originals)
			return err
		}
	}
	return nil
}

// rollback restores touched paths, last first.
func rollback(ctx context.Context, ws workspace.Workspace, touched []string, originals map[string]original) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	done := map[string]bool{}
	for i := len(touched) - 1; i >= 0; i-- {
		p := touched[i]
		if done[p] {
			continue
		}
		done[p] = true
		o := originals[p]
		if o.exists {
			_, _ = ws.WriteFile(ctx, p, o.data, o.mode)
			continue
		}
		if err := ws.Remove(ctx, p, false); err != nil && !plugin.HasCode(err, plugin.CodeNotFound) {
			continue // best effort: the error that started the rollback is what the caller reports
		}
	}
}

// summarise describes each change with its revision token and line counts.
func summarise(p *diffpatch.Patch, changes []diffpatch.Change) []patchedFile {
	added, removed := map[string]int{}, map[string]int{}
	for _, f := range p.Files {
		key := f.NewPath
		if key == "" {
			key = f.OldPath
		}
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				switch l.Kind {
				case '+':
					added[key]++
				case '-':
					removed[key]++
				}
			}
		}
	}
	out := make([]patchedFile, 0, len(changes))
	for _, c := range changes {
		pf := patchedFile{Path: c.Path, LinesAdded: added[c.Path], LinesRemoved: removed[c.Path]}
		switch c.Op {
		case diffpatch.OpCreate:
			pf.Op = "create"
		case diffpatch.OpDelete:
			pf.Op = "delete"
		case diffpatch.OpRename:
			pf.Op, pf.OldPath = "rename", c.OldPath
		default:
			pf.Op = "modify"
		}
		if c.Op != diffpatch.OpDelete {
			pf.SHA256 = sha256Hex(c.Content)
		}
		out = append(out, pf)
	}
	return out
}
