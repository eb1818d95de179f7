package outline

import (
	"bytes"
	"path"
	"strings"
	"testing"
)

func FuzzOutline(f *testing.F) {
	for _, s := range []string{tsxComponentFile, cssFile, htmlFile, packageJSON, goFile, pyFile,
		"", "\n", "`${`${'}`}`", "class A { m() { ` } }", "{\"a\":{\"b\":{\"c\":1}}}", "<h1>x", "def f(:\n\t'''"} {
		f.Add([]byte(s), 0)
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, src []byte, max int) {
		lines := bytes.Count(src, []byte{'\n'}) + 1
		limit := max
		if limit <= 0 {
			limit = DefaultMaxSymbols
		}
		for _, lang := range allLanguages {
			syms := Outline(lang, src, max)
			if len(syms) > limit {
				t.Fatalf("%s: %d symbols, max %d", lang, len(syms), limit)
			}
			for _, s := range syms {
				if s.Line < 1 || s.Line > lines {
					t.Fatalf("%s: symbol %+v outside lines 1..%d", lang, s, lines)
				}
				if s.Name == "" || s.Kind == "" || s.Depth < 0 {
					t.Fatalf("%s: bad symbol %+v", lang, s)
				}
			}
		}
	})
}

func FuzzRank(f *testing.F) {
	f.Add("login button handler", []byte("function handleLogin() {}\n"), []byte(".button {}\n"), 100, 5)
	f.Add("a", []byte(""), []byte("\n\n\n"), 0, 0)
	f.Add("x_y-z", []byte("x\r\ny\r\nz"), []byte("xyz xy"), 3, 1)
	f.Fuzz(func(t *testing.T, query string, a, b []byte, budget, win int) {
		if budget > 1<<20 {
			budget = 1 << 20
		}
		docs := []Doc{{Path: "src/a.tsx", Content: a}, {Path: "b.py", Content: b}, {Path: "c.go", Content: a}}
		got := Rank(query, docs, budget, win)
		if budget <= 0 && len(got) > 0 {
			t.Fatalf("windows with budget %d", budget)
		}
		total := 0
		for _, w := range got {
			total += len(w.Content)
			if w.StartLine < 1 || w.EndLine < w.StartLine {
				t.Fatalf("bad window %+v", w)
			}
			if win > 0 && w.EndLine-w.StartLine+1 > win {
				t.Fatalf("window %d-%d longer than %d", w.StartLine, w.EndLine, win)
			}
		}
		if total > max(budget, 0) {
			t.Fatalf("%d bytes over budget %d", total, budget)
		}
	})
}

// Language lower-cases names on the stack; it must name the language that
// lower-casing with strings.ToLower names, for any path.
func FuzzLanguage(f *testing.F) {
	long := strings.Repeat("X", 70)
	for _, p := range []string{"", "/", ".", "a/", "x.", "App.TSX", "README", "ReadMe.MD", "Cargo.LOCK",
		".ENV.Local", "DOCKERFILE.dev", "src/É.TSX", "\u212a.json", "Go.Mod", long + ".tsx", long + "/" + long + ".CSS",
		"dir.d/file", "weird\xff.ts", `C:\Src\Main.GO`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		base := strings.ToLower(path.Base(strings.ReplaceAll(p, "\\", "/")))
		want, ok := nameLanguages[base]
		switch {
		case ok:
		case strings.HasPrefix(base, ".env.") || strings.HasPrefix(base, "dockerfile."):
			want = "text"
		default:
			want = extLanguages[path.Ext(base)]
		}
		if got := Language(p); got != want {
			t.Fatalf("Language(%q) = %q, want %q", p, got, want)
		}
	})
}
