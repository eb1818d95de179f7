package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSeqParam: a resume point (after_seq, Last-Event-ID) is digits only,
// as the API's description says.
func TestSeqParam(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "5": 5, "0012": 12} {
		got, err := seqParam(in)
		assert.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"+5", "-0", "-1", "5 ", "0x10", "1e3", "99999999999999999999"} {
		_, err := seqParam(in)
		assert.Error(t, err, in)
	}
}
