// Package outline gives the coding-agent toolpack a cheap understanding of a
// workspace: which language each file is in, a symbol outline of it
// (Outline) and the line windows most relevant to a query (Rank).
//
// Everything here is heuristic on purpose. Outline runs on every file of a
// large tree on each workspace_index call, so the scanners are single-pass,
// linear-time and forgiving: malformed input yields fewer symbols, never an
// error or a panic. Only Go gets a real parser, because the standard library
// has one.
package outline

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
)

// extLanguages maps a lower-cased file extension (with its dot) to a language.
var extLanguages = map[string]string{
	".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
	".tsx": "tsx",
	".js":  "javascript", ".mjs": "javascript", ".cjs": "javascript",
	".jsx":  "jsx",
	".css":  "css",
	".scss": "scss",
	".html": "html", ".htm": "html",
	".json": "json", ".jsonc": "json", ".json5": "json", ".webmanifest": "json",
	".go": "go",
	".py": "python", ".pyi": "python",
	".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
	".yaml": "yaml", ".yml": "yaml",
	".toml": "toml",
	".sh":   "shell", ".bash": "shell", ".zsh": "shell",
	".txt": "text", ".text": "text", ".log": "text", ".csv": "text", ".tsv": "text",
	".env": "text", ".ini": "text", ".cfg": "text", ".conf": "text", ".svg": "text",
	".xml": "text", ".sql": "text", ".gitignore": "text", ".dockerignore": "text",
	".npmrc": "text", ".nvmrc": "text", ".editorconfig": "text", ".prettierignore": "text",
	".eslintignore": "text",
}

// nameLanguages maps well-known base names (lower-cased) that have no telling
// extension, or whose extension would mislead, to a language.
var nameLanguages = map[string]string{
	".prettierrc": "json", ".eslintrc": "json", ".babelrc": "json", ".swcrc": "json",
	".bashrc": "shell", ".bash_profile": "shell", ".profile": "shell", ".zshrc": "shell",
	"pipfile": "toml", "cargo.lock": "toml", "poetry.lock": "toml",
	"makefile": "text", "dockerfile": "text", "license": "text", "licence": "text",
	"readme": "text", "changelog": "text", "authors": "text", "codeowners": "text",
	"procfile": "text", "go.mod": "text", "go.sum": "text", "yarn.lock": "text",
	".env": "text", ".gitignore": "text", ".dockerignore": "text", ".gitattributes": "text",
	"requirements.txt": "text",
}

// Language names a file's language from its path (extension and a few
// well-known names): "typescript", "tsx", "javascript", "jsx", "css", "scss",
// "html", "json", "go", "python", "markdown", "yaml", "toml", "shell", "text",
// or "" when unknown or binary-looking (images, archives, fonts...).
func Language(p string) string {
	// Lower-cased into a buffer on the stack: an index asks this of every
	// file it lists, and strings.ToLower allocated for each name with a
	// capital letter in it. 64 bytes holds any usual file name; a longer
	// one takes the slower path.
	var buf [64]byte
	return languageOf(appendLower(buf[:0], path.Base(strings.ReplaceAll(p, "\\", "/"))))
}

// appendLower appends s lower-cased as strings.ToLower does.
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return append(b, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// languageOf is Language of a lower-cased base name. Map lookups by
// string(base) and comparisons with string(...) do not allocate.
func languageOf(base []byte) string {
	if l, ok := nameLanguages[string(base)]; ok {
		return l
	}
	// ".env.local", "Dockerfile.dev": the well-known stem decides.
	for _, stem := range [...]string{".env.", "dockerfile."} {
		if len(base) >= len(stem) && string(base[:len(stem)]) == stem {
			return "text"
		}
	}
	// The extension, as path.Ext gives it (a base name has no slash).
	// TypeScript declaration files ("x.d.ts") are plain typescript anyway.
	i := bytes.LastIndexByte(base, '.')
	if i < 0 {
		return ""
	}
	return extLanguages[string(base[i:])]
}
