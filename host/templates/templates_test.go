package templates

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTemplates(t *testing.T) {
	names := []string{}
	for _, tpl := range List() {
		names = append(names, tpl.Name)
		files, ok := Files(tpl.Name)
		require.True(t, ok)
		assert.NotEmpty(t, files, tpl.Name)
		for _, f := range files {
			assert.NotContains(t, f.Path, tpl.Name+"/", "paths are relative to the template")
		}
	}
	assert.Equal(t, []string{"static-site", "vite-react"}, names)
	_, ok := Files("nope")
	assert.False(t, ok)

	files, _ := Files("vite-react")
	byPath := map[string][]byte{}
	for _, f := range files {
		byPath[f.Path] = f.Data
	}
	for _, p := range []string{"package.json", "index.html", "src/App.tsx", "src/main.tsx", "tsconfig.json", "vite.config.ts", ".gitignore"} {
		assert.Contains(t, byPath, p)
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	require.NoError(t, json.Unmarshal(byPath["package.json"], &pkg))
	assert.Contains(t, pkg.Scripts, "build")
}
