package plugin

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFeatures(t *testing.T) {
	assert.Equal(t, []string{"exec", "loopback"}, Features(" loopback,exec,, exec "))
	assert.Nil(t, Features(""))
}

func TestMissingFeatures(t *testing.T) {
	assert.Nil(t, MissingFeatures("", "exec"))
	assert.Nil(t, MissingFeatures("exec,loopback", "loopback, exec,network"))
	assert.Equal(t, []string{"gpu", "loopback"}, MissingFeatures("loopback,exec,gpu", "exec"))
	assert.Equal(t, []string{"exec"}, MissingFeatures("exec", ""))
}
