package outline

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeApp is a small React app with one obvious answer to "login button
// handler" and several distractors that mention one of the words.
func fakeApp() []Doc {
	pad := func(n int) string { return strings.Repeat("// layout detail\n", n) }
	return []Doc{
		{Path: "src/components/LoginButton.tsx", Content: []byte(`import React from "react";
import { login } from "../api/auth";
` + pad(30) + `
export function LoginButton({ onDone }: Props) {
  const handleLogin = async () => {
    await login();
    onDone();
  };
  return <button onClick={handleLogin}>Log in</button>;
}
` + pad(30))},
		{Path: "src/api/auth.ts", Content: []byte(`export async function login(): Promise<void> {
  await fetch("/api/login", { method: "POST" });
}
export function logout() {}
`)},
		{Path: "src/components/Header.tsx", Content: []byte(pad(10) + `export function Header() {
  return <header><Nav /></header>;
}
` + pad(10))},
		{Path: "src/styles/button.css", Content: []byte(".button { color: red; }\n.button:hover { color: blue; }\n")},
		{Path: "README.md", Content: []byte("# App\n\nRun `npm run dev`. The login form posts to the API.\n")},
		{Path: "src/utils/format.ts", Content: []byte("export const formatDate = (d: Date) => d.toISOString();\n")},
		{Path: "public/logo.png", Content: []byte("\x89PNG\r\n\x1a\n\x00\x00login button handler")},
	}
}

func totalBytes(ws []Window) int {
	n := 0
	for _, w := range ws {
		n += len(w.Content)
	}
	return n
}

func TestRankPicksTheHandler(t *testing.T) {
	got := Rank("login button handler", fakeApp(), 4000, 12)
	require.NotEmpty(t, got)
	first := got[0]
	assert.Equal(t, "src/components/LoginButton.tsx", first.Path)
	assert.Contains(t, first.Content, "const handleLogin")
	assert.Contains(t, first.Content, "function LoginButton")
	assert.LessOrEqual(t, first.EndLine-first.StartLine+1, 12)
	lines := strings.Split(fakeAppFile(t, first.Path), "\n")
	assert.Equal(t, strings.Join(lines[first.StartLine-1:first.EndLine], "\n"), first.Content,
		"content is exactly the lines named")
	for i, w := range got {
		assert.NotEqual(t, "public/logo.png", w.Path, "binary files are not ranked")
		if i > 0 {
			assert.GreaterOrEqual(t, got[i-1].Score, w.Score, "best first")
		}
	}
}

func fakeAppFile(t *testing.T, path string) string {
	for _, d := range fakeApp() {
		if d.Path == path {
			return string(d.Content)
		}
	}
	t.Fatalf("no file %s", path)
	return ""
}

func TestRankBudget(t *testing.T) {
	docs := fakeApp()
	all := Rank("login button handler", docs, 1<<20, 12)
	require.Greater(t, len(all), 2)
	total := totalBytes(all)
	for budget := 1; budget <= total+10; budget += 7 {
		got := Rank("login button handler", docs, budget, 12)
		assert.LessOrEqual(t, totalBytes(got), budget, "budget %d", budget)
	}
	assert.Equal(t, total, totalBytes(Rank("login button handler", docs, total, 12)), "an exact budget takes everything")

	// Too small for the best window but not for a smaller one: the big
	// one is skipped, the smaller ones still come.
	small := len(all[0].Content) - 1
	got := Rank("login button handler", docs, small, 12)
	require.NotEmpty(t, got)
	assert.LessOrEqual(t, totalBytes(got), small)
	for _, w := range got {
		assert.False(t, w.Path == all[0].Path && w.StartLine == all[0].StartLine && w.EndLine == all[0].EndLine)
	}
	assert.Empty(t, Rank("login", docs, 0, 12))
}

func TestRankNoOverlapAndWindowSize(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 300; i++ {
		if i%7 == 0 || i%11 == 0 {
			fmt.Fprintf(&b, "cache.invalidate(key%d) // invalidate the cache\n", i)
		} else {
			fmt.Fprintf(&b, "x%d := compute(%d)\n", i, i)
		}
	}
	docs := []Doc{{Path: "cache.go", Content: []byte(b.String())}, {Path: "other.go", Content: []byte("package other\n")}}
	for _, win := range []int{1, 5, 9, 40} {
		got := Rank("invalidate cache", docs, 1<<20, win)
		require.NotEmpty(t, got)
		for i, a := range got {
			assert.LessOrEqual(t, a.EndLine-a.StartLine+1, win)
			assert.GreaterOrEqual(t, a.StartLine, 1)
			assert.LessOrEqual(t, a.EndLine, 300)
			for _, c := range got[i+1:] {
				if a.Path == c.Path {
					assert.True(t, a.EndLine < c.StartLine || c.EndLine < a.StartLine,
						"window %d-%d overlaps %d-%d", a.StartLine, a.EndLine, c.StartLine, c.EndLine)
				}
			}
		}
	}
}

func TestRankDeterministic(t *testing.T) {
	docs := fakeApp()
	// Identical files make score ties that only the path can break.
	for i := 0; i < 5; i++ {
		docs = append(docs, Doc{Path: fmt.Sprintf("src/copy%d/login.ts", i), Content: []byte("export const login = 1;\n")})
	}
	want := Rank("login button handler", docs, 3000, 10)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 10; i++ {
		shuffled := append([]Doc(nil), docs...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		assert.Equal(t, want, Rank("login button handler", shuffled, 3000, 10))
	}
	var copies []string
	for _, w := range want {
		if strings.HasPrefix(w.Path, "src/copy") {
			copies = append(copies, w.Path)
		}
	}
	assert.Equal(t, []string{"src/copy0/login.ts", "src/copy1/login.ts", "src/copy2/login.ts",
		"src/copy3/login.ts", "src/copy4/login.ts"}, copies, "ties go by path")
}

func TestRankIdentifierQueries(t *testing.T) {
	docs := []Doc{
		{Path: "a.py", Content: []byte("def fetch_user_profile(id):\n    pass\n")},
		{Path: "b.ts", Content: []byte("const unrelated = 1;\n")},
		{Path: "c.css", Content: []byte(".user-profile-card { margin: 0 }\n")},
	}
	got := Rank("fetchUserProfile", docs, 1000, 5)
	require.Len(t, got, 2)
	assert.Equal(t, "a.py", got[0].Path, "all three terms and a definition beat two terms")
	assert.Equal(t, "c.css", got[1].Path)

	crlf := []Doc{{Path: "w.txt", Content: []byte("one\r\ntwo login\r\nthree\r\n")}}
	got = Rank("login", crlf, 100, 3)
	require.Len(t, got, 1)
	assert.Equal(t, "one\ntwo login\nthree", got[0].Content)
	assert.Equal(t, 1, got[0].StartLine)
	assert.Equal(t, 3, got[0].EndLine)
}

func TestRankEmpty(t *testing.T) {
	docs := fakeApp()
	assert.Empty(t, Rank("", docs, 1000, 10))
	assert.Empty(t, Rank("  the a of  ", docs, 1000, 10), "stop words and one-letter terms only")
	assert.Empty(t, Rank("kubernetes", docs, 1000, 10))
	assert.Empty(t, Rank("login", nil, 1000, 10))
}

func TestTerms(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{"login button handler", []string{"login", "button", "handler"}},
		{"handleLogin user_name kebab-case a.b/c", []string{"handle", "login", "user", "name", "kebab", "case"}},
		{"HTTPServer parseURLPath v2Api", []string{"http", "server", "parse", "url", "path", "v2", "api"}},
		{"src/components/LoginButton.tsx", []string{"src", "components", "login", "button", "tsx"}},
		{"Where is the Login and the LOGIN?", []string{"login"}},
		{"", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Terms(tt.query), tt.query)
	}
	long := strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma ", 2)
	assert.Len(t, Terms(long), maxQueryTerms)
}

func TestMatchWeight(t *testing.T) {
	assert.Equal(t, 1.0, matchWeight([]byte("Login"), "login"))
	assert.Equal(t, partialWeight, matchWeight([]byte("handle"), "handler"))
	assert.Equal(t, partialWeight, matchWeight([]byte("buttons"), "button"))
	assert.Equal(t, 0.0, matchWeight([]byte("log"), "login"), "too short to be a variant")
	assert.Equal(t, 0.0, matchWeight([]byte("username"), "user"), "a different word")
	assert.Equal(t, 0.0, matchWeight([]byte("logout"), "login"))
}

func TestRankPrefersDefinitions(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 60; i++ {
		switch i {
		case 5:
			b.WriteString("  form.onsubmit = () => handleLogin(user);\n")
		case 50:
			b.WriteString("function handleLogin(user) {\n")
		default:
			fmt.Fprintf(&b, "  step(%d);\n", i)
		}
	}
	docs := []Doc{{Path: "src/app.js", Content: []byte(b.String())}, {Path: "src/other.js", Content: []byte("step();\n")}}
	got := Rank("handleLogin", docs, 1000, 3)
	require.Len(t, got, 2)
	assert.Equal(t, 49, got[0].StartLine, "the definition comes first")
	assert.Equal(t, 4, got[1].StartLine)
	assert.Greater(t, got[0].Score, got[1].Score)
}
