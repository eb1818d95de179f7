package convert

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// testEnum stands in for a generated proto enum.
type testEnum int32

// The rule every closed set follows: writers get the enum of a known
// string and UNSPECIFIED otherwise; readers prefer a known enum value and
// fall back to the string.
func TestEnum(t *testing.T) {
	m := NewEnum(map[testEnum]string{1: "one", 2: "two"})

	assert.Equal(t, testEnum(1), m.ToProto("one"))
	assert.Equal(t, testEnum(2), m.ToProto("two"))
	assert.Equal(t, testEnum(0), m.ToProto("three"), "a string outside the set has no enum")
	assert.Equal(t, testEnum(0), m.ToProto(""))

	tests := []struct {
		name string
		e    testEnum
		s    string
		want string
	}{
		{"both agree", 1, "one", "one"},
		{"only the string (an older peer)", 0, "two", "two"},
		{"only the enum", 2, "", "two"},
		{"the enum wins when they differ", 1, "two", "one"},
		{"an unknown enum falls back to the string", 9, "two", "two"},
		{"a string outside the set still comes through", 0, "three", "three"},
		{"an unknown enum and no string", 9, "", ""},
		{"nothing set", 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, m.FromProto(tc.e, tc.s))
		})
	}
}

// A set too big to scan (over smallEnum values) follows the same rule
// through its map.
func TestBigEnum(t *testing.T) {
	values := map[testEnum]string{}
	for i := 1; i <= smallEnum+2; i++ {
		values[testEnum(i)] = string(rune('a' + i))
	}
	m := NewEnum(values)
	assert.Nil(t, m.small)
	for e, s := range values {
		assert.Equal(t, e, m.ToProto(s))
		assert.Equal(t, s, m.FromProto(e, ""))
	}
	assert.Equal(t, testEnum(0), m.ToProto("zz"))
}

// BenchmarkEnumToProto: the conversion a run's request makes for each
// message of its history.
func BenchmarkEnumToProto(b *testing.B) {
	m := NewEnum(map[testEnum]string{1: "system", 2: "user", 3: "assistant"})
	roles := []string{"user", "assistant", "system", "tool"}
	var sum testEnum
	for i := 0; b.Loop(); i++ {
		sum += m.ToProto(roles[i%len(roles)])
	}
	if sum == 0 {
		b.Fatal("no role converted")
	}
}

// A table that gives the zero value or the empty string a meaning, or
// names a string twice, is a programming error caught when it is built.
func TestNewEnumRefusesBadTables(t *testing.T) {
	assert.Panics(t, func() { NewEnum(map[testEnum]string{0: "zero"}) })
	assert.Panics(t, func() { NewEnum(map[testEnum]string{1: ""}) })
	assert.Panics(t, func() { NewEnum(map[testEnum]string{1: "one", 2: "one"}) })
}
