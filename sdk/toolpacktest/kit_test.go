package toolpacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePack is a toolpack whose behaviour tests set through function fields.
type fakePack struct {
	ToolsF func() []plugin.ToolSpec
	CallF  func(ctx context.Context, call toolpack.Call, ws workspace.Workspace) (plugin.ToolResult, error)
}

func (p *fakePack) Info() plugin.Info {
	return plugin.Info{Name: "fake", Kind: plugin.KindToolpack, Version: "0.0.1", APIVersion: plugin.APIVersion}
}

func (p *fakePack) Tools(context.Context) ([]plugin.ToolSpec, error) { return p.ToolsF(), nil }

func (p *fakePack) Call(ctx context.Context, call toolpack.Call, ws workspace.Workspace) (plugin.ToolResult, error) {
	return p.CallF(ctx, call, ws)
}

var saveNoteSpec = plugin.ToolSpec{
	Name:        "save_note",
	Description: "Save a note under notes/NAME.txt.",
	InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name","text"],
"properties":{"name":{"type":"string"},"text":{"type":"string"}}}`),
	OutputSchema:      json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}`),
	DefaultPermission: plugin.PermissionAllow,
}

// goodPack is a small conforming toolpack: one tool that writes a file.
func goodPack() *fakePack {
	return &fakePack{
		ToolsF: func() []plugin.ToolSpec { return []plugin.ToolSpec{saveNoteSpec} },
		CallF: func(ctx context.Context, call toolpack.Call, ws workspace.Workspace) (plugin.ToolResult, error) {
			if call.Tool != "save_note" {
				return plugin.ToolFail(toolpack.CodeUnknownTool, "no such tool", "tool"), nil
			}
			var in struct{ Name, Text *string }
			dec := json.NewDecoder(bytes.NewReader(call.Input))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil || in.Name == nil || in.Text == nil || *in.Name == "" {
				return plugin.ToolFail("BAD_INPUT", "want {name, text}", ""), nil
			}
			p := "notes/" + *in.Name + ".txt"
			if _, err := ws.WriteFile(ctx, p, []byte(*in.Text), 0); err != nil {
				if code := plugin.CodeOf(err); code == plugin.CodePathDenied {
					return plugin.ToolFail("BAD_NAME", err.Error(), "name"), nil
				}
				return plugin.ToolResult{}, err
			}
			return plugin.ToolOK(map[string]string{"path": p}), nil
		},
	}
}

var goodCases = []Case{
	{Name: "save", Tool: "save_note", Input: json.RawMessage(`{"name":"a","text":"hello"}`), WantOK: true,
		Check: func(t *testing.T, _ plugin.ToolResult, ws workspace.Workspace) {
			data, _, err := ws.ReadFile(context.Background(), "notes/a.txt", workspace.ReadOptions{})
			require.NoError(t, err)
			assert.Equal(t, "hello", string(data))
		}},
	{Name: "escape", Tool: "save_note", Input: json.RawMessage(`{"name":"../../x","text":""}`), WantCode: "BAD_NAME", WantField: "name"},
}

func runWith(t *testing.T, p *fakePack, cases []Case) {
	Run(t, func(t *testing.T, ws workspace.Resolver) *toolpack.Client {
		return plugintest.Toolpack(t, p, nil, ws)
	}, cases)
}

func TestRunPassesAConformingPack(t *testing.T) {
	runWith(t, goodPack(), goodCases)
}

// badPacks are packs that break one rule each, and what the kit must say.
var badPacks = map[string]struct {
	pack  func() *fakePack
	cases []Case
	want  string
}{
	"uncovered tool": {pack: func() *fakePack {
		p := goodPack()
		other := saveNoteSpec
		other.Name = "other_tool"
		p.ToolsF = func() []plugin.ToolSpec { return []plugin.ToolSpec{saveNoteSpec, other} }
		return p
	}, cases: goodCases, want: `tool "other_tool" has no case`},
	"unknown tool as error": {pack: func() *fakePack {
		p := goodPack()
		good := p.CallF
		p.CallF = func(ctx context.Context, c toolpack.Call, ws workspace.Workspace) (plugin.ToolResult, error) {
			if c.Tool != "save_note" {
				return plugin.ToolResult{}, errors.New("no such tool")
			}
			return good(ctx, c, ws)
		}
		return p
	}, cases: goodCases, want: "an unknown tool is a failed result"},
	"accepts malformed input": {pack: func() *fakePack {
		p := goodPack()
		p.CallF = func(context.Context, toolpack.Call, workspace.Workspace) (plugin.ToolResult, error) {
			return plugin.ToolOK(map[string]string{"path": "x"}), nil
		}
		return p
	}, cases: goodCases, want: "save_note accepted input"},
	"input schema not an object": {pack: func() *fakePack {
		p := goodPack()
		bad := saveNoteSpec
		bad.InputSchema = json.RawMessage(`{"type":"array"}`)
		p.ToolsF = func() []plugin.ToolSpec { return []plugin.ToolSpec{bad} }
		return p
	}, cases: goodCases, want: `must say "type": "object"`},
	"output off its schema": {pack: func() *fakePack {
		p := goodPack()
		good := p.CallF
		p.CallF = func(ctx context.Context, c toolpack.Call, ws workspace.Workspace) (plugin.ToolResult, error) {
			res, err := good(ctx, c, ws)
			if res.OK {
				res.Output = json.RawMessage(`{"file":"x"}`)
			}
			return res, err
		}
		return p
	}, cases: goodCases, want: `path: is required`},
	"wrong code": {pack: goodPack, cases: []Case{goodCases[0], {Name: "escape", Tool: "save_note",
		Input: json.RawMessage(`{"name":"../../x","text":""}`), WantCode: "SOMETHING_ELSE"}}, want: "SOMETHING_ELSE"},
}

// TestRunFailsBadPacks runs the kit on each bad pack in a child process
// (a failing *testing.T cannot be caught in-process) and expects it to fail
// with the right complaint.
func TestRunFailsBadPacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child test process per bad pack")
	}
	for name, bp := range badPacks {
		t.Run(name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBadPackHelper$", "-test.v")
			cmd.Env = append(os.Environ(), "TOOLPACKTEST_BAD_PACK="+name)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the kit passed a bad pack:\n%s", out)
			assert.Contains(t, string(out), bp.want)
		})
	}
}

// TestBadPackHelper is the child side of TestRunFailsBadPacks.
func TestBadPackHelper(t *testing.T) {
	name := os.Getenv("TOOLPACKTEST_BAD_PACK")
	if name == "" {
		t.Skip("only run by TestRunFailsBadPacks")
	}
	bp := badPacks[name]
	runWith(t, bp.pack(), bp.cases)
}

func TestSpecProblems(t *testing.T) {
	good := saveNoteSpec
	with := func(f func(*plugin.ToolSpec)) []plugin.ToolSpec { s := good; f(&s); return []plugin.ToolSpec{s} }
	cases := map[string]struct {
		tools []plugin.ToolSpec
		want  string
	}{
		"no tools":          {nil, "lists no tools"},
		"bad name":          {with(func(s *plugin.ToolSpec) { s.Name = "Save-Note" }), "does not match"},
		"long name":         {with(func(s *plugin.ToolSpec) { s.Name = "a" + strings.Repeat("b", 64) }), "does not match"},
		"duplicate":         {[]plugin.ToolSpec{good, good}, "listed twice"},
		"no description":    {with(func(s *plugin.ToolSpec) { s.Description = "  " }), "no description"},
		"bad permission":    {with(func(s *plugin.ToolSpec) { s.DefaultPermission = "maybe" }), "not allow, ask or deny"},
		"schema not json":   {with(func(s *plugin.ToolSpec) { s.InputSchema = json.RawMessage(`{`) }), "not a JSON object"},
		"schema not object": {with(func(s *plugin.ToolSpec) { s.InputSchema = json.RawMessage(`{"type":"string"}`) }), `"type": "object"`},
		"no input schema":   {with(func(s *plugin.ToolSpec) { s.InputSchema = nil }), "not a JSON object"},
		"impossible require": {with(func(s *plugin.ToolSpec) {
			s.InputSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["x"]}`)
		}), `requires "x"`},
		"output not json": {with(func(s *plugin.ToolSpec) { s.OutputSchema = json.RawMessage(`nope`) }), "output schema is not valid JSON"},
		"output a string": {with(func(s *plugin.ToolSpec) { s.OutputSchema = json.RawMessage(`"x"`) }), "neither"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Contains(t, strings.Join(specProblems(tc.tools), "\n"), tc.want)
		})
	}
	assert.Empty(t, specProblems([]plugin.ToolSpec{good}))
}

func TestCaseProblems(t *testing.T) {
	tools := []plugin.ToolSpec{saveNoteSpec}
	ok := goodCases[0]
	cases := map[string]struct {
		cases []Case
		want  string
	}{
		"no cases":         {nil, "has no case"},
		"only failures":    {[]Case{goodCases[1]}, "only failing cases"},
		"unnamed":          {[]Case{{Tool: "save_note", Input: ok.Input, WantOK: true}}, "has no Name"},
		"same name":        {[]Case{ok, ok}, "used twice"},
		"unknown tool":     {[]Case{ok, {Name: "x", Tool: "nope", WantCode: "C"}}, `names tool "nope"`},
		"ok and code":      {[]Case{{Name: "x", Tool: "save_note", Input: ok.Input, WantOK: true, WantCode: "C"}}, "at once"},
		"failure, no code": {[]Case{ok, {Name: "x", Tool: "save_note"}}, "names no WantCode"},
		"bad file path":    {[]Case{{Name: "x", Tool: "save_note", Input: ok.Input, WantOK: true, Files: map[string]string{"../x": ""}}}, "not a workspace path"},
		"input off schema": {[]Case{{Name: "x", Tool: "save_note", Input: json.RawMessage(`{"name":"a","text":1,"more":true}`), WantOK: true}}, `more: is not a field of this tool`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Contains(t, strings.Join(caseProblems(tools, tc.cases), "\n"), tc.want)
		})
	}
	assert.Empty(t, caseProblems(tools, goodCases))
	assert.Empty(t, caseProblems(tools, append(goodCases, Case{Name: "unknown on purpose", Tool: "nope", WantCode: toolpack.CodeUnknownTool})))
}

// TestSchemaProblems: examples are held to the host's own validator, so
// what the old shallow check let through (minLength, enum, pattern, $ref,
// nested objects) is caught.
func TestSchemaProblems(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["n"],
"$defs":{"mode":{"enum":["fast","slow"]}},
"properties":{"n":{"type":"integer"},"f":{"type":"number"},"s":{"type":["string","null"]},"any":{},
"name":{"type":"string","minLength":2,"pattern":"^[a-z]+$"},"mode":{"$ref":"#/$defs/mode"},
"edits":{"type":"array","items":{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}}}}`)
	cases := map[string]string{
		`{"n":1}`:                           "",
		`{"n":2.0,"f":1,"s":null}`:          "",
		`{"n":1,"any":[1],"name":"ab"}`:     "",
		`{"n":1,"mode":"fast"}`:             "",
		`{"n":1.5}`:                         "n: ",
		`{}`:                                "n: is required",
		`{"n":1,"x":1}`:                     "x: is not a field of this tool",
		`{"n":1,"s":3}`:                     "s: ",
		`[]`:                                "want object",
		`{`:                                 "not valid JSON",
		`{"n":1,"name":"a"}`:                "name: minLength",
		`{"n":1,"name":"AB"}`:               "name: ",
		`{"n":1,"mode":"medium"}`:           "mode: ",
		`{"n":1,"edits":[{"path":"a"},{}]}`: "edits[1].path: is required",
	}
	for value, want := range cases {
		got := strings.Join(schemaProblems(schema, json.RawMessage(value)), "\n")
		if want == "" {
			assert.Empty(t, got, value)
		} else {
			assert.Contains(t, got, want, value)
		}
	}
	assert.Empty(t, schemaProblems(json.RawMessage(`true`), json.RawMessage(`[1]`)), "the schema true accepts anything")
	assert.Contains(t, strings.Join(schemaProblems(json.RawMessage(`{"$ref":"https://example.com/x.json"}`), json.RawMessage(`{}`)), ""),
		"does not compile", "a reference outside the schema is never fetched")
}
