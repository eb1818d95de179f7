// Package toolpacktest is the toolpack conformance kit: it checks a
// toolpack's tool descriptions, its answers to bad input, and the author's
// example calls, through its real gRPC client with an in-memory workspace.
package toolpacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Case is one example call the author provides.
type Case struct {
	Name  string
	Tool  string
	Input json.RawMessage
	// Files is the workspace the call starts with.
	Files map[string]string
	// WantOK or WantCode: the expected outcome.
	WantOK   bool
	WantCode string
	// Check, when set, inspects the result and the workspace afterwards.
	Check func(t *testing.T, res plugin.ToolResult, ws workspace.Workspace)
}

var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Run checks the toolpack behind newClient. newClient gets the kit's
// workspace resolver to configure the client with.
func Run(t *testing.T, newClient func(t *testing.T, ws workspace.Resolver) *toolpack.Client, cases []Case) {
	var mu sync.Mutex
	spaces := map[string]workspace.Workspace{}
	resolve := func(_ context.Context, id string) (workspace.Workspace, error) {
		mu.Lock()
		defer mu.Unlock()
		ws, ok := spaces[id]
		if !ok {
			return nil, plugin.Errorf(plugin.CodeNotFound, "workspace_id", "no workspace %q", id)
		}
		return ws, nil
	}
	var n atomic.Int64
	lend := func(files map[string]string) (string, workspace.Workspace) {
		id := fmt.Sprintf("ws-%d", n.Add(1))
		ws := NewMemoryWorkspace(files)
		mu.Lock()
		spaces[id] = ws
		mu.Unlock()
		return id, ws
	}
	c := newClient(t, resolve)
	ctx := context.Background()

	t.Run("info", func(t *testing.T) {
		info, err := c.Info(ctx)
		require.NoError(t, err)
		assert.Equal(t, plugin.KindToolpack, info.Kind)
		assert.NotEmpty(t, info.Name)
		assert.NotEmpty(t, info.Version)
		assert.Equal(t, plugin.APIVersion, info.APIVersion)
	})

	tools, err := c.Tools(ctx)
	require.NoError(t, err)
	t.Run("tools", func(t *testing.T) {
		require.NotEmpty(t, tools)
		seen := map[string]bool{}
		for _, tl := range tools {
			assert.Regexp(t, toolName, tl.Name)
			assert.False(t, seen[tl.Name], "duplicate tool %s", tl.Name)
			seen[tl.Name] = true
			assert.NotEmpty(t, tl.Description, tl.Name)
			var schema map[string]any
			if assert.NoError(t, json.Unmarshal(tl.InputSchema, &schema), "%s input schema", tl.Name) {
				assert.Equal(t, "object", schema["type"], "%s input schema must describe an object", tl.Name)
			}
			if len(tl.OutputSchema) > 0 {
				assert.True(t, json.Valid(tl.OutputSchema), "%s output schema", tl.Name)
			}
			assert.Contains(t, []plugin.Permission{plugin.PermissionAllow, plugin.PermissionAsk, plugin.PermissionDeny}, tl.DefaultPermission, tl.Name)
		}
		covered := map[string]bool{}
		for _, cs := range cases {
			covered[cs.Tool] = true
		}
		for _, tl := range tools {
			assert.True(t, covered[tl.Name], "no example case covers tool %s: every tool needs one", tl.Name)
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		id, _ := lend(nil)
		res, err := c.Call(ctx, toolpack.Call{RunID: "r", CallID: "c", Tool: "no_such_tool_xyz", Input: json.RawMessage(`{}`)}, id)
		require.NoError(t, err, "an unknown tool is a result, not an error")
		assert.False(t, res.OK)
		if assert.NotNil(t, res.Error) {
			assert.Equal(t, toolpack.CodeUnknownTool, res.Error.Code)
		}
	})

	t.Run("malformed input", func(t *testing.T) {
		for _, tl := range tools {
			for _, bad := range []string{`{`, `[]`, `"x"`, `{"unexpected_field_xyz":1}`} {
				id, _ := lend(nil)
				res, err := c.Call(ctx, toolpack.Call{RunID: "r", CallID: "c", Tool: tl.Name, Input: json.RawMessage(bad)}, id)
				require.NoError(t, err, "%s with %s: bad input is a result, not an error", tl.Name, bad)
				assert.False(t, res.OK, "%s accepted %s", tl.Name, bad)
				if assert.NotNil(t, res.Error, tl.Name) {
					assert.NotEmpty(t, res.Error.Code, tl.Name)
				}
			}
		}
	})

	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		id, _ := lend(nil)
		start := time.Now()
		res, err := c.Call(cctx, toolpack.Call{RunID: "r", CallID: "c", Tool: tools[0].Name, Input: json.RawMessage(`{}`)}, id)
		assert.True(t, err != nil || !res.OK, "a cancelled call must not succeed")
		assert.Less(t, time.Since(start), 10*time.Second)
	})

	runCase := func(t *testing.T, cs Case) {
		id, ws := lend(cs.Files)
		res, err := c.Call(ctx, toolpack.Call{RunID: "r", CallID: cs.Name, Tool: cs.Tool, Input: cs.Input}, id)
		require.NoError(t, err)
		if cs.WantOK {
			assert.True(t, res.OK, "want ok, got %+v", res.Error)
			assert.True(t, json.Valid(res.Output), "output must be JSON")
		} else {
			assert.False(t, res.OK, "want %s, got ok", cs.WantCode)
			if assert.NotNil(t, res.Error) && cs.WantCode != "" {
				assert.Equal(t, cs.WantCode, res.Error.Code, res.Error.Message)
			}
		}
		if cs.Check != nil {
			cs.Check(t, res, ws)
		}
	}
	for _, cs := range cases {
		t.Run("case "+cs.Name, func(t *testing.T) { runCase(t, cs) })
	}
	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			for _, cs := range cases {
				wg.Add(1)
				go func() {
					defer wg.Done()
					runCase(t, cs)
				}()
			}
		}
		wg.Wait()
	})
}
