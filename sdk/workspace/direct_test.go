package workspace

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestVerifyDirect: a grant holds for its workspace, under its key, until
// its deadline, and for nothing else.
func TestVerifyDirect(t *testing.T) {
	key := bytes.Repeat([]byte{7}, DirectKeyBytes)
	otherKey := bytes.Repeat([]byte{8}, DirectKeyBytes)
	now := time.UnixMilli(1_800_000_000_000)
	good := SignDirect(key, "sbx_1", now.Add(time.Second))
	payload, _, _ := strings.Cut(good, ".")
	_, otherSig, _ := strings.Cut(SignDirect(key, "sbx_2", now.Add(time.Second)), ".")
	cases := []struct {
		name  string
		key   []byte
		token string
		id    string
		at    time.Time
		ok    bool
	}{
		{"its grant", key, good, "sbx_1", now, true},
		{"a millisecond before the deadline", key, good, "sbx_1", now.Add(time.Second - time.Millisecond), true},
		{"at the deadline", key, good, "sbx_1", now.Add(time.Second), false},
		{"another workspace", key, good, "sbx_2", now, false},
		{"a prefix of the workspace id", key, SignDirect(key, "sbx_1\n9", now.Add(time.Hour)), "sbx_1", now, false},
		{"another key", otherKey, good, "sbx_1", now, false},
		{"no key", nil, good, "sbx_1", now, false},
		{"no token", key, "", "sbx_1", now, false},
		{"no signature", key, payload, "sbx_1", now, false},
		{"another grant's signature", key, payload + "." + otherSig, "sbx_1", now, false},
		{"not base64", key, "!!.!!", "sbx_1", now, false},
	}
	for _, tc := range cases {
		err := verifyDirect(tc.key, tc.token, tc.id, tc.at)
		if (err == nil) != tc.ok {
			t.Errorf("%s: verify = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// BenchmarkVerifyDirect is what the sandbox plugin adds to each direct call.
func BenchmarkVerifyDirect(b *testing.B) {
	key := bytes.Repeat([]byte{7}, DirectKeyBytes)
	token := SignDirect(key, "sbx_0123456789abcdef", time.Now().Add(time.Hour))
	for b.Loop() {
		if err := verifyDirect(key, token, "sbx_0123456789abcdef", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
