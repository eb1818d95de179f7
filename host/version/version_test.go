package version

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestString(t *testing.T) {
	s := String()
	assert.True(t, strings.HasPrefix(s, Version+" "), s)
	assert.Contains(t, s, runtime.GOOS+"/"+runtime.GOARCH)
}
