package convert

import "fmt"

// Enum maps one closed set of the protocol between its Go string values
// and its proto enum. Such a set travels twice on the wire: as the string
// field older peers know and as a typed *_enum field added beside it. Enum
// holds the rule for both directions, so that every conversion of the set
// goes through one table:
//
//   - a writer sets the string as it is and the enum to ToProto of it;
//   - a reader takes FromProto of both: the enum when it is a value of
//     the set, otherwise the string (an older peer sends only the string,
//     a newer one may send an enum number this build does not know).
type Enum[E ~int32, S ~string] struct {
	toProto   map[S]E
	fromProto map[E]S
	// small holds a set of up to smallEnum values: ToProto scans it
	// instead of hashing (a run's request converts a role per history
	// message, up to 200, and the map's lookups were 2% of a host's CPU
	// under load).
	small []enumValue[E, S]
}

// enumValue is one value of a set in both forms.
type enumValue[E ~int32, S ~string] struct {
	e E
	s S
}

// smallEnum is the size up to which ToProto scans instead of hashing.
const smallEnum = 8

// NewEnum builds the mapping of a set from its values, each enum value
// with its string. The enum's zero (UNSPECIFIED) is "not set" and has no
// string, so it may not appear; nor may a string appear twice. Tables are
// package variables, so a wrong one panics when the package loads.
func NewEnum[E ~int32, S ~string](values map[E]S) Enum[E, S] {
	m := Enum[E, S]{toProto: make(map[S]E, len(values)), fromProto: make(map[E]S, len(values))}
	for e, s := range values {
		if e == 0 || s == "" {
			panic(fmt.Sprintf("convert.NewEnum: %d=%q: the zero enum value and the empty string mean unset", e, s))
		}
		if _, dup := m.toProto[s]; dup {
			panic(fmt.Sprintf("convert.NewEnum: %q appears twice", s))
		}
		m.toProto[s] = e
		m.fromProto[e] = s
	}
	if len(values) <= smallEnum {
		for e, s := range values {
			m.small = append(m.small, enumValue[E, S]{e, s})
		}
	}
	return m
}

// ToProto is the enum value a writer sets beside the string s: its value
// in the set, or the zero (UNSPECIFIED) for a string outside it, which
// then travels in the string field alone.
func (m Enum[E, S]) ToProto(s S) E {
	if m.small != nil {
		for _, v := range m.small {
			if v.s == s {
				return v.e
			}
		}
		return 0
	}
	return m.toProto[s]
}

// FromProto is what a reader makes of the pair a peer sent: the value of
// e when e is a known value of the set, else the string s as it came.
func (m Enum[E, S]) FromProto(e E, s string) S {
	if v, ok := m.fromProto[e]; ok {
		return v
	}
	return S(s)
}
