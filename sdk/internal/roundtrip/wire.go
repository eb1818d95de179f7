package roundtrip

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// OverTheWire sends m through its wire encoding, as a peer would, and
// returns what the other side decodes. A message with only the string
// field of a closed set encodes exactly as an older peer's does (proto3
// leaves a zero enum out), and an enum number this build does not know
// survives decoding as that number.
func OverTheWire[M proto.Message](t testing.TB, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	out := m.ProtoReflect().New().Interface().(M)
	require.NoError(t, proto.Unmarshal(b, out))
	return out
}
