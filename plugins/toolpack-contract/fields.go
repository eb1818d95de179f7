package contract

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// field is one input or output field of a tool, as the summary lists it.
type field struct {
	// Name is the property's name; "rows[].month" is property month of the
	// objects in array rows, "[].month" of the objects of a top-level array.
	Name string `json:"name"`
	// Type is the JSON Schema type ("string", "integer|null",
	// "array<object>"), "any" when the schema does not say, "unknown" when
	// it is behind a $ref that does not resolve.
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	Description string `json:"description"`
	// Ref is a $ref the field's schema points to that could not be
	// resolved within the tool's schema.
	Ref string `json:"ref,omitempty"`
}

// maxFieldDescriptionRunes bounds a field's description in a summary: a
// sentence or two, enough to say what the field means.
const maxFieldDescriptionRunes = 200

// maxRefHops bounds a chain of $refs ($ref to a $ref to …), which also ends
// a cycle.
const maxRefHops = 8

// schemaSummary is what summarise finds in one schema.
type schemaSummary struct {
	// Type is the top-level type; "" when there is no schema.
	Type   string
	Fields []field
	// Unresolved lists the $refs, once each, that point outside the schema
	// or at nothing.
	Unresolved []string
}

// obj is a schema object's members, by key.
type obj map[string]json.RawMessage

// summarise lists the fields of schema: the properties of an object schema
// one level deep, and the properties of the items of array properties (or
// of a top-level array) of objects. Local $refs ("#/$defs/x") are followed.
func summarise(schema json.RawMessage) schemaSummary {
	schema = bytes.TrimSpace(schema)
	if len(schema) == 0 {
		return schemaSummary{}
	}
	w := walker{root: schema}
	root, ok := asObject(schema)
	if !ok {
		// A boolean schema: true takes anything, false nothing.
		if string(schema) == "false" {
			return schemaSummary{Type: "none"}
		}
		return schemaSummary{Type: "any"}
	}
	root, ref := w.resolve(root)
	if ref != "" {
		return schemaSummary{Type: "unknown", Unresolved: w.unresolved}
	}
	s := schemaSummary{Type: w.typeOf(root)}
	if items, ok := w.objectItems(root); ok {
		s.Fields, _ = w.properties(items, "[].")
	} else {
		fields, schemas := w.properties(root, "")
		for i, f := range fields {
			s.Fields = append(s.Fields, f)
			if schemas[i] == nil {
				continue
			}
			if items, ok := w.objectItems(schemas[i]); ok {
				nested, _ := w.properties(items, f.Name+"[].")
				s.Fields = append(s.Fields, nested...)
			}
		}
	}
	s.Unresolved = w.unresolved
	return s
}

// walker resolves $refs against one schema document and remembers the ones
// it could not.
type walker struct {
	root       json.RawMessage
	unresolved []string
}

// resolve follows o's $ref, if any, within the document. It returns the
// object reached, or the first $ref that does not resolve.
func (w *walker) resolve(o obj) (obj, string) {
	for range maxRefHops {
		raw, ok := o["$ref"]
		if !ok {
			return o, ""
		}
		var ref string
		if json.Unmarshal(raw, &ref) != nil {
			return o, "" // not a reference at all; leave it to the schema's owner
		}
		target, ok := w.pointer(ref)
		if !ok {
			w.note(ref)
			return o, ref
		}
		next, ok := asObject(target)
		if !ok {
			return obj{}, "" // a boolean schema: no properties to walk
		}
		o = next
	}
	ref := "(a chain of more than " + strconv.Itoa(maxRefHops) + " $refs)"
	w.note(ref)
	return o, ref
}

func (w *walker) note(ref string) {
	if !slices.Contains(w.unresolved, ref) {
		w.unresolved = append(w.unresolved, ref)
	}
}

// pointer finds a "#/a/b" JSON pointer in the document; references to other
// documents and to anchors are not followed.
func (w *walker) pointer(ref string) (json.RawMessage, bool) {
	if ref == "#" {
		return w.root, true
	}
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	cur := w.root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		cur = bytes.TrimSpace(cur)
		if len(cur) > 0 && cur[0] == '[' {
			var list []json.RawMessage
			i, err := strconv.Atoi(tok)
			if json.Unmarshal(cur, &list) != nil || err != nil || i < 0 || i >= len(list) {
				return nil, false
			}
			cur = list[i]
			continue
		}
		o, ok := asObject(cur)
		if !ok {
			return nil, false
		}
		if cur, ok = o[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// properties lists o's properties in the order the schema declares them,
// names prefixed with prefix, with the schema of each ($ref resolved; nil
// when it is not an object or does not resolve).
func (w *walker) properties(o obj, prefix string) ([]field, []obj) {
	names, props := orderedMembers(o["properties"])
	required := stringList(o["required"])
	out := make([]field, 0, len(names))
	schemas := make([]obj, len(names))
	for i, name := range names {
		f := field{Name: prefix + name, Required: slices.Contains(required, name), Type: "any"}
		p, ok := asObject(props[name])
		if !ok {
			if string(bytes.TrimSpace(props[name])) == "false" {
				f.Type = "none"
			}
			out = append(out, f)
			continue
		}
		// A description beside a $ref describes this use of the target,
		// so it wins over the target's own.
		desc := stringValue(p["description"])
		p, ref := w.resolve(p)
		if ref != "" {
			f.Type, f.Ref = "unknown", ref
		} else {
			f.Type = w.typeOf(p)
			schemas[i] = p
			if desc == "" {
				desc = stringValue(p["description"])
			}
		}
		f.Description, _ = trimRunes(strings.Join(strings.Fields(desc), " "), maxFieldDescriptionRunes)
		out = append(out, f)
	}
	return out, schemas
}

// objectItems returns the item schema of an array schema whose items are
// objects with properties.
func (w *walker) objectItems(o obj) (obj, bool) {
	raw, ok := o["items"]
	if !ok {
		return nil, false
	}
	items, ok := asObject(raw)
	if !ok {
		return nil, false
	}
	items, ref := w.resolve(items)
	if ref != "" {
		return nil, false
	}
	_, hasProps := items["properties"]
	return items, hasProps
}

// typeOf names a schema's type: its "type" (a list joined with "|"), else
// what its const, enum, anyOf/oneOf, properties or items imply; arrays say
// what they hold when the items say ("array<string>").
func (w *walker) typeOf(o obj) string {
	t := w.declaredType(o, 0)
	if t == "array" {
		if raw, ok := o["items"]; ok {
			if items, ok := asObject(raw); ok {
				if items, ref := w.resolve(items); ref == "" {
					if it := w.declaredType(items, 1); it != "any" {
						return "array<" + it + ">"
					}
				}
			}
		}
	}
	return t
}

func (w *walker) declaredType(o obj, depth int) string {
	if raw, ok := o["type"]; ok {
		var one string
		if json.Unmarshal(raw, &one) == nil && one != "" {
			return one
		}
		if list := stringList(raw); len(list) > 0 {
			return strings.Join(list, "|")
		}
	}
	if raw, ok := o["const"]; ok {
		return jsonType(raw)
	}
	if raw, ok := o["enum"]; ok {
		var values []json.RawMessage
		if json.Unmarshal(raw, &values) == nil && len(values) > 0 {
			var kinds []string
			for _, v := range values {
				if k := jsonType(v); !slices.Contains(kinds, k) {
					kinds = append(kinds, k)
				}
			}
			return strings.Join(kinds, "|")
		}
	}
	// Alternatives: the union of their types, one level down (deeper
	// nesting is rare and would make the summary no easier to read).
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		var alts []json.RawMessage
		if depth > 1 || json.Unmarshal(o[key], &alts) != nil || len(alts) == 0 {
			continue
		}
		var kinds []string
		for _, alt := range alts {
			a, ok := asObject(alt)
			if !ok {
				continue
			}
			if a, ref := w.resolve(a); ref == "" {
				for _, k := range strings.Split(w.declaredType(a, depth+1), "|") {
					if k != "any" && !slices.Contains(kinds, k) {
						kinds = append(kinds, k)
					}
				}
			}
		}
		if len(kinds) > 0 {
			if key == "allOf" {
				return kinds[0] // every alternative holds; the first type says enough
			}
			return strings.Join(kinds, "|")
		}
	}
	if _, ok := o["properties"]; ok {
		return "object"
	}
	if _, ok := o["items"]; ok {
		return "array"
	}
	return "any"
}

// jsonType names the JSON Schema type of a JSON value.
func jsonType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "any"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "number"
	}
	return "integer"
}

// asObject decodes a JSON object's members; false for anything else.
func asObject(raw json.RawMessage) (obj, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var o obj
	if json.Unmarshal(raw, &o) != nil {
		return nil, false
	}
	return o, true
}

// orderedMembers returns a JSON object's keys in document order, with the
// members (the last of a repeated key, as encoding/json reads it).
func orderedMembers(raw json.RawMessage) ([]string, obj) {
	o, ok := asObject(raw)
	if !ok {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys, o
}

func stringList(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	return list
}

func stringValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// trimRunes cuts s to at most n runes, ending it with "…" when cut.
func trimRunes(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	cut := 0
	for i := range s {
		if n--; n < 0 {
			cut = i
			break
		}
	}
	// Leave room for the ellipsis within the bound.
	_, size := utf8.DecodeLastRuneInString(s[:cut])
	return strings.TrimRightFunc(s[:cut-size], func(r rune) bool { return r == ' ' }) + "…", true
}
