package patch

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/plugins/toolpack-patch/internal/outline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hand-written encoding of the index must give json.Marshal's bytes.
func TestIndexJSONMatchesMarshal(t *testing.T) {
	odd := []string{"", "plain/path.tsx", `quote"back\slash`, "<b>&amp;</b>", "tab\there\nnewline\x00nul\x7fdel",
		"é ü 日本", "line\u2028sep\u2029para", "bad\xffutf8\xc3", "emoji 🙂"}
	cases := map[string]workspaceIndexOutput{
		"empty":         {Files: []indexedFile{}, SkippedFolders: []string{}},
		"nil slices":    {},
		"truncated":     {Files: []indexedFile{{Path: "a", Size: 1, SHA256: "ab", Language: "text"}}, SkippedFolders: []string{"dist"}, Truncated: true},
		"binary":        {Files: []indexedFile{{Path: "logo.png", Size: -1, Binary: true, Symbols: []outline.Symbol{}}}, SkippedFolders: []string{}},
		"symbols depth": {Files: []indexedFile{{Path: "x.ts", Symbols: []outline.Symbol{{Name: "A", Kind: "class", Line: 1}, {Name: "m", Kind: "method", Line: 2, Depth: 1}}}}},
	}
	var files []indexedFile
	for i, s := range odd {
		files = append(files, indexedFile{Path: s, Size: int64(i) << 40, SHA256: s, Language: s,
			Symbols: []outline.Symbol{{Name: s, Kind: s, Line: -i, Depth: i}}})
	}
	cases["odd strings"] = workspaceIndexOutput{Files: files, SkippedFolders: odd}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(o)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(o.appendJSON(nil)))
		})
	}
}

func FuzzIndexJSON(f *testing.F) {
	f.Add("src/App.tsx", "App", "dist", int64(12), 3)
	f.Add("a<b>&\"\\\u2028\xff", "\x00", "é", int64(-1), 0)
	f.Fuzz(func(t *testing.T, p, name, skipped string, size int64, line int) {
		o := workspaceIndexOutput{
			Files:          []indexedFile{{Path: p, Size: size, SHA256: name, Language: p, Binary: line%2 == 0, Symbols: []outline.Symbol{{Name: name, Kind: p, Line: line, Depth: line % 3}}}},
			SkippedFolders: []string{skipped},
		}
		want, err := json.Marshal(o)
		require.NoError(t, err)
		require.Equal(t, string(want), string(o.appendJSON(nil)))
	})
}

// The tool's output is what json.Marshal makes of what it decodes to.
func TestWorkspaceIndexOutputIsMarshalled(t *testing.T) {
	ws, _ := realWorkspace(t, indexedApp)
	for _, input := range []string{`{}`, `{"outline":false}`, `{"max_files":3}`} {
		var out workspaceIndexOutput
		res := callOn(t, ws, "coding_agent_workspace_index", input, &out)
		require.True(t, res.OK, "%+v", res.Error)
		want, err := json.Marshal(out)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(res.Output), input)
	}
}
