// Package toolinput makes a model's tool input fit the tool before any
// toolpack sees it: it first repairs the shapes real models send (arguments
// as a JSON string, nested under "input" or "args", camelCase or aliased
// keys), then validates the result against the tool's JSON Schema. Every
// engine's calls pass through it, so a toolpack can trust its input's shape
// and a model gets the same precise refusal whichever engine drives it.
package toolinput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// wrapperKeys are keys models put a tool's real arguments under.
var wrapperKeys = []string{"input", "args", "arguments", "parameters", "params", "payload"}

// aliases maps a canonical property name to the names models use for it
// instead. An alias is renamed only when the schema has the canonical
// property and not the alias itself.
var aliases = map[string][]string{
	"path":      {"file_path", "filePath", "filepath", "file", "filename", "fileName"},
	"from_path": {"fromPath", "from", "source", "src", "old_path", "oldPath"},
	"to_path":   {"toPath", "to", "destination", "dest", "new_path", "newPath"},
}

// Normalise rewrites raw into the shape the schema's top-level properties
// expect and reports each repair it made (for the run's diagnostics). It
// never invents values: it unwraps, parses and renames, and leaves anything
// it does not recognise for validation to refuse. props are the schema's
// top-level property names.
func Normalise(raw json.RawMessage, props map[string]bool) (json.RawMessage, []string) {
	var notes []string
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), append(notes, "no input: treated as {}")
	}
	if inner, ok := objectInString(raw); ok {
		raw = inner
		notes = append(notes, "input sent as a JSON string: parsed")
	}
	var obj map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return raw, notes
	}
	changed := false
	// Unwrap at most twice: {"args": {"input": {...}}} happens; deeper
	// nesting is not a shape models produce and is left to validation.
	for range 2 {
		if len(obj) != 1 {
			break
		}
		var key string
		var val json.RawMessage
		for k, v := range obj {
			key, val = k, bytes.TrimSpace(v)
		}
		if !isWrapper(key) || props[key] {
			break
		}
		if inner, ok := objectInString(val); ok {
			val = inner
		}
		var nested map[string]json.RawMessage
		if len(val) == 0 || val[0] != '{' || json.Unmarshal(val, &nested) != nil {
			break
		}
		obj, changed = nested, true
		notes = append(notes, fmt.Sprintf("arguments nested under %q: unwrapped", key))
	}
	for _, k := range sortedKeys(obj) {
		if props[k] {
			continue
		}
		canon := canonicalFor(k, props)
		if canon == "" {
			continue
		}
		if _, taken := obj[canon]; taken {
			continue
		}
		obj[canon] = obj[k]
		delete(obj, k)
		changed = true
		notes = append(notes, fmt.Sprintf("%s → %s", k, canon))
	}
	if !changed {
		return raw, notes
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return raw, notes
	}
	return out, notes
}

// canonicalFor returns the schema property key stands for, or "".
func canonicalFor(key string, props map[string]bool) string {
	for canon, names := range aliases {
		if !props[canon] {
			continue
		}
		for _, a := range names {
			if a == key {
				return canon
			}
		}
	}
	if s := snakeCase(key); s != key && props[s] {
		return s
	}
	return ""
}

func isWrapper(key string) bool {
	for _, w := range wrapperKeys {
		if key == w {
			return true
		}
	}
	return false
}

// objectInString returns the object a JSON string value holds, when it holds
// one (models often send arguments as a string of JSON).
func objectInString(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return nil, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !json.Valid([]byte(s)) {
		return nil, false
	}
	return json.RawMessage(s), true
}

// snakeCase turns startLine into start_line (ASCII camelCase only).
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) && r < unicode.MaxASCII {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sortedKeys returns m's keys sorted, so that the notes, and which alias
// wins when two are sent, do not depend on map order.
func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
