package patch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// MaxTextFileBytes is the largest file these tools read, search or patch. An
// app's hand-written sources are far smaller; a bigger file is generated or
// vendored, and a model editing it by hand does more harm than good.
const MaxTextFileBytes = 4 << 20

// binarySniffBytes is how much of a file is looked at for a NUL byte, the
// mark of a binary file (git looks at the same amount).
const binarySniffBytes = 8000

// isBinary reports whether data looks like a binary file.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0
}

// readText reads the text file at p (already through checkPath) for a tool
// whose input field is field. A refusal comes back as a tool error; a broken
// workspace as an error.
func readText(ctx context.Context, ws workspace.Workspace, field, p string) ([]byte, *plugin.ToolError, error) {
	data, _, te, err := readTextInfo(ctx, ws, field, p)
	return data, te, err
}

// readTextInfo is readText that also returns the file's info.
func readTextInfo(ctx context.Context, ws workspace.Workspace, field, p string) ([]byte, workspace.FileInfo, *plugin.ToolError, error) {
	data, info, err := ws.ReadFile(ctx, p, workspace.ReadOptions{})
	if err != nil {
		te, err := workspaceFailure(err, field, p)
		return nil, info, te, err
	}
	if te := checkResolved(field, p, info.Path); te != nil {
		return nil, info, te, nil
	}
	if te := checkText(field, p, data); te != nil {
		return nil, info, te, nil
	}
	return data, info, nil, nil
}

// checkText refuses content these tools must not treat as text.
func checkText(field, p string, data []byte) *plugin.ToolError {
	if len(data) > MaxTextFileBytes {
		return &plugin.ToolError{Code: CodePolicyViolation, Field: field,
			Message: fmt.Sprintf("%s is %d bytes; these tools work on text files of at most %d bytes (4 MiB)", p, len(data), MaxTextFileBytes)}
	}
	if isBinary(data) {
		return &plugin.ToolError{Code: CodePolicyViolation, Field: field,
			Message: p + " is a binary file; these tools read and edit text files only"}
	}
	return nil
}

// boolean returns an optional boolean field, def when absent.
func (in input) boolean(name string, def bool) (bool, *plugin.ToolError) {
	raw, ok := in[name]
	if !ok {
		return def, nil
	}
	if kind := jsonKind(raw); kind != "a boolean" {
		return false, invalid(name, "%s must be true or false, not %s", name, kind)
	}
	var b bool
	_ = json.Unmarshal(raw, &b)
	return b, nil
}

// intIn returns an optional integer field within [lo, hi], def when absent.
func (in input) intIn(name string, def, lo, hi int) (int, *plugin.ToolError) {
	raw, ok := in[name]
	if !ok {
		return def, nil
	}
	if kind := jsonKind(raw); kind != "a number" {
		return 0, invalid(name, "%s must be an integer between %d and %d, not %s", name, lo, hi, kind)
	}
	f, err := json.Number(bytes.TrimSpace(raw)).Float64()
	if err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, invalid(name, "%s must be an integer between %d and %d, not %s", name, lo, hi, raw)
	}
	return int(f), nil
}

// pathArg reads a required path field and applies the path policy.
func (in input) pathArg(name string) (string, *plugin.ToolError) {
	s, te := in.str(name, true, true)
	if te != nil {
		return "", te
	}
	return checkPath(name, s)
}

// schema builds a tool's JSON Schema object from its properties and required
// names, always closed (additionalProperties false) so that a misspelt field
// is refused rather than ignored.
func schema(required []string, properties string) json.RawMessage {
	if required == nil {
		required = []string{} // "required": null is not a schema
	}
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,` +
		`"required":` + string(req) + `,"properties":{` + properties + `}}`)
}

// pathProp is the schema of a path field.
func pathProp(name, what string) string {
	return fmt.Sprintf(`%q:{"type":"string","minLength":1,"maxLength":1024,"description":%q}`, name,
		what+", relative to the app's root with forward slashes, e.g. src/App.tsx")
}

// sha256Hex is the hex sha256 of data: the revision token of a file's content.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// fileReaders is how many files are read at once by the tools that read many:
// each read is a round trip to the sandbox, so a few in flight hide the
// latency.
const fileReaders = 8

// readMany reads paths a few at a time and calls fn with each file's index
// and content (fn may run concurrently for different files). A file that is
// gone, refused or too large since it was listed is passed to skip instead: a
// tree changes under a listing. Any other workspace error ends the walk.
func readMany(ctx context.Context, ws workspace.Workspace, paths []string, fn func(i int, data []byte), skip func(i int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for range fileReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data, _, err := ws.ReadFile(ctx, paths[i], workspace.ReadOptions{})
				if err != nil {
					switch plugin.CodeOf(err) {
					case plugin.CodeNotFound, plugin.CodePathDenied, plugin.CodeIsDirectory, plugin.CodeTooLarge:
						skip(i)
						continue
					}
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				fn(i, data)
			}
		}()
	}
feed:
	for i := range paths {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
