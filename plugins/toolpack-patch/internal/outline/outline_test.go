package outline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// sym is a compact expected symbol.
func sym(name, kind string, line, depth int) Symbol {
	return Symbol{Name: name, Kind: kind, Line: line, Depth: depth}
}

const bt = "`"

var tsxComponentFile = `import React, { useState } from "react";
import type { User } from "../api/types";
import "./LoginButton.css";

// function notAFunction() {} in a comment
/* class NotAClass {} */
const template = ` + bt + `
function insideTemplate() {}
${user.name} class AlsoNot {}
` + bt + `;

export interface LoginButtonProps {
  onLogin: (user: User) => void;
  label?: string;
}

export type Status = "idle" | "loading" | "error";

enum Mode { Light, Dark }

export const MAX_ATTEMPTS = 3;
let attempts = 0;

export const LoginButton: React.FC<LoginButtonProps> = ({ onLogin, label = "Log in" }) => {
  const [status, setStatus] = useState<Status>("idle");
  const handleLogin = async () => {
    setStatus("loading");
  };
  return <button className="btn" onClick={handleLogin}>{label}</button>;
};

export default function LoginPage() {
  return <div>Don't worry</div>;
}

export const useAuth = () => useState(null);

export class AuthStore extends Store<{ user: User }> {
  private user?: User;
  static instance = new AuthStore();
  constructor() { super(); }
  async login(name: string): Promise<void> {
    const re = /function fake\(\)/g;
  }
  get isLoggedIn() { return !!this.user; }
  handleLogout = () => { this.user = undefined; };
}

function helper(x: number) { return x / 2; }
export { helper, attempts as tries };
`

var tsxComponentSymbols = []Symbol{
	sym("react", "import", 1, 0),
	sym("../api/types", "import", 2, 0),
	sym("./LoginButton.css", "import", 3, 0),
	sym("template", "const", 7, 0),
	sym("LoginButtonProps", "interface", 12, 0),
	sym("Status", "type", 17, 0),
	sym("Mode", "enum", 19, 0),
	sym("MAX_ATTEMPTS", "const", 21, 0),
	sym("attempts", "var", 22, 0),
	sym("LoginButton", "component", 24, 0),
	sym("LoginPage", "component", 32, 0),
	sym("useAuth", "function", 36, 0),
	sym("AuthStore", "class", 38, 0),
	sym("constructor", "method", 41, 1),
	sym("login", "method", 42, 1),
	sym("isLoggedIn", "method", 45, 1),
	sym("handleLogout", "method", 46, 1),
	sym("helper", "function", 49, 0),
	sym("helper", "export", 50, 0),
	sym("tries", "export", 50, 0),
}

const cssFile = `/* .commented { color: red } */
:root {
  --primary: #0af;
  --radius: 4px;
}

.btn, .btn-primary {
  color: var(--primary);
  background: url("data:image/svg+xml;{}");
}

.btn:hover { color: red; }

#main > .content {
  padding: 0;
}

@media (max-width: 600px) {
  .btn { width: 100%; }
}

@keyframes spin {
  from { transform: rotate(0deg); }
  to { transform: rotate(360deg); }
}
`

const htmlFile = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>My App</title>
  <link rel="stylesheet" href="/styles.css">
  <!-- <div id="commented"></div> -->
</head>
<body>
  <div id="root"></div>
  <h1>Welcome <em>home</em></h1>
  <section id='features'>
    <h2>Features</h2>
  </section>
  <script>
    document.write('<div id="fake"></div>');
  </script>
  <script type="module" src="/src/main.tsx"></script>
</body>
</html>
`

const packageJSON = `{
  "name": "my-app",
  "version": "1.0.0",
  "scripts": {
    "dev": "vite",
    "build": "tsc && vite build"
  },
  "dependencies": {
    "react": "^18.2.0",
    "nested": { "deep": true }
  },
  "files": ["dist", {"x": 1}]
}
`

const goFile = `package store

import (
	"context"
	"errors"
)

// ErrNotFound is returned when nothing matches.
var ErrNotFound = errors.New("not found")

const (
	maxUsers = 100
	minUsers = 1
)

type User struct {
	Name string
}

type Store interface {
	Get(ctx context.Context, id string) (User, error)
}

type ID string

func New() *memStore { return &memStore{} }

func (s *memStore) Get(ctx context.Context, id string) (User, error) {
	return User{}, ErrNotFound
}

func (l List[T]) Len() int { return 0 }
`

const pyFile = `"""Module docstring.

def not_a_function():
    pass
"""
import os
from typing import List

MAX_RETRIES = 3
TIMEOUT: float = 2.5
lower_case = 1


class Client:
    """A client."""

    def __init__(self, url):
        self.url = url

    async def fetch(self, path):
        def inner():
            return "class Fake:"
        return inner()


def main(
    argv,
):
    pass
`

func TestOutlineLanguages(t *testing.T) {
	tests := []struct {
		name string
		lang string
		src  string
		want []Symbol
	}{
		{"react component", "tsx", tsxComponentFile, tsxComponentSymbols},
		{"css", "css", cssFile, []Symbol{
			sym(":root", "selector", 2, 0),
			sym("--primary", "custom-property", 3, 1),
			sym("--radius", "custom-property", 4, 1),
			sym(".btn, .btn-primary", "selector", 7, 0),
			sym(".btn:hover", "selector", 12, 0),
			sym("#main > .content", "selector", 14, 0),
			sym("@media (max-width: 600px)", "media", 18, 0),
			sym(".btn", "selector", 19, 1),
			sym("spin", "keyframes", 22, 0),
		}},
		{"scss", "scss", "// .x { }\n$brand: #f00;\n@use 'sass:math';\n@mixin card($p) {\n  padding: $p;\n}\n.nav {\n  &__item { color: $brand; }\n  .col-#{$i} { width: 1px; }\n}\n", []Symbol{
			sym("$brand", "var", 2, 0),
			sym("sass:math", "import", 3, 0),
			sym("card", "mixin", 4, 0),
			sym(".nav", "selector", 7, 0),
			sym("&__item", "selector", 8, 1),
			sym(".col-#{$i}", "selector", 9, 1),
		}},
		{"index.html", "html", htmlFile, []Symbol{
			sym("My App", "title", 5, 0),
			sym("/styles.css", "link", 6, 0),
			sym("div#root", "id", 10, 0),
			sym("Welcome home", "heading", 11, 0),
			sym("section#features", "id", 12, 0),
			sym("Features", "heading", 13, 1),
			sym("/src/main.tsx", "script", 18, 0),
		}},
		{"package.json", "json", packageJSON, []Symbol{
			sym("name", "key", 2, 0),
			sym("version", "key", 3, 0),
			sym("scripts", "key", 4, 0),
			sym("dev", "key", 5, 1),
			sym("build", "key", 6, 1),
			sym("dependencies", "key", 8, 0),
			sym("react", "key", 9, 1),
			sym("nested", "key", 10, 1),
			sym("files", "key", 12, 0),
		}},
		{"tsconfig with comments", "json", "{\n  // strict mode\n  \"compilerOptions\": { /* c */ \"strict\": true, },\n  \"include\": [\"src\"],\n}\n", []Symbol{
			sym("compilerOptions", "key", 3, 0),
			sym("strict", "key", 3, 1),
			sym("include", "key", 4, 0),
		}},
		{"go", "go", goFile, []Symbol{
			sym("context", "import", 4, 0),
			sym("errors", "import", 5, 0),
			sym("ErrNotFound", "var", 9, 0),
			sym("maxUsers", "const", 12, 0),
			sym("minUsers", "const", 13, 0),
			sym("User", "struct", 16, 0),
			sym("Store", "interface", 20, 0),
			sym("ID", "type", 24, 0),
			sym("New", "function", 26, 0),
			sym("memStore.Get", "method", 28, 0),
			sym("List.Len", "method", 32, 0),
		}},
		{"python", "python", pyFile, []Symbol{
			sym("os", "import", 6, 0),
			sym("typing", "import", 7, 0),
			sym("MAX_RETRIES", "const", 9, 0),
			sym("TIMEOUT", "const", 10, 0),
			sym("Client", "class", 14, 0),
			sym("__init__", "method", 17, 1),
			sym("fetch", "method", 20, 1),
			sym("inner", "function", 21, 2),
			sym("main", "function", 26, 0),
		}},
		{"markdown", "markdown", "# Title\n\n```sh\n# not a heading\n```\n## Install ##\n", []Symbol{
			sym("Title", "heading", 1, 0),
			sym("Install", "heading", 6, 1),
		}},
		{"yaml", "yaml", "# ci\nname: CI\non:\n  push:\n    branches: [main]\njobs:\n  build:\n    run: |\n      key: not\n  test:\n    x: 1\n", []Symbol{
			sym("name", "key", 2, 0),
			sym("on", "key", 3, 0),
			sym("push", "key", 4, 1),
			sym("jobs", "key", 6, 0),
			sym("build", "key", 7, 1),
			sym("test", "key", 10, 1),
		}},
		{"toml", "toml", "title = \"x\"\n[server]\nport = 80\n[[plugins]]\nname = \"a\"\n", []Symbol{
			sym("title", "key", 1, 0),
			sym("server", "table", 2, 0),
			sym("plugins", "table", 4, 0),
		}},
		{"shell", "shell", "#!/bin/sh\nbuild() {\n  echo build\n}\nfunction deploy {\n  :\n}\n", []Symbol{
			sym("build", "function", 2, 0),
			sym("deploy", "function", 5, 0),
		}},
		{"text has no outline", "text", "function x() {}\n", nil},
		{"unknown has no outline", "", "function x() {}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Outline(tt.lang, []byte(tt.src), 0))
		})
	}
}

func TestOutlineJSDeclarations(t *testing.T) {
	tests := []struct {
		name string
		lang string
		src  string
		want []Symbol
	}{
		{"export default anonymous function", "javascript", "export default function () {}\n",
			[]Symbol{sym("default", "function", 1, 0)}},
		{"async and generator functions", "javascript", "async function load() {}\nexport function* ids() {}\n",
			[]Symbol{sym("load", "function", 1, 0), sym("ids", "function", 2, 0)}},
		{"capitalised function is no component outside jsx", "typescript", "function Foo() {}\nconst Bar = () => 1\n",
			[]Symbol{sym("Foo", "function", 1, 0), sym("Bar", "function", 2, 0)}},
		{"memo, forwardRef and styled components", "jsx",
			"const Card = React.memo(function Card() {});\nconst Input = forwardRef((p, ref) => null);\nconst Box = styled.div`\n  color: red;\n`;\nconst size = compute();\n",
			[]Symbol{sym("Card", "component", 1, 0), sym("Input", "component", 2, 0), sym("Box", "component", 3, 0), sym("size", "const", 6, 0)}},
		{"typed arrow with return type", "typescript", "export const parse = (s: string): Result<T> => ok(s);\n",
			[]Symbol{sym("parse", "function", 1, 0)}},
		{"namespace members are nested", "typescript", "namespace Api {\n  export function get() {}\n}\n",
			[]Symbol{sym("Api", "namespace", 1, 0), sym("get", "function", 2, 1)}},
		{"export default identifier", "javascript", "const App = 1\nexport default App\n",
			[]Symbol{sym("App", "const", 1, 0), sym("App", "export", 2, 0)}},
		{"re-export list with from", "typescript", "export { a, type B, c as d } from './x';\n",
			[]Symbol{sym("a", "export", 1, 0), sym("B", "export", 1, 0), sym("d", "export", 1, 0)}},
		{"nested functions are not outlined", "javascript", "function outer() {\n  function inner() {}\n  const x = () => 1;\n}\n",
			[]Symbol{sym("outer", "function", 1, 0)}},
		{"object literal methods are not class methods", "javascript", "const api = {\n  login() {},\n};\n",
			[]Symbol{sym("api", "const", 1, 0)}},
		{"decorated class members", "typescript", "@Component({ selector: 'x' })\nexport class Widget {\n  @Input() name: string;\n  @HostListener('click')\n  onClick() {}\n}\n",
			[]Symbol{sym("Widget", "class", 2, 0), sym("onClick", "method", 5, 1)}},
		{"statements without semicolons", "javascript", "const a = 1\nlet b = a\nfunction c() {}\n",
			[]Symbol{sym("a", "const", 1, 0), sym("b", "var", 2, 0), sym("c", "function", 3, 0)}},
		{"call arguments are not declarations", "javascript", "app.get('/', function handler() {})\ndescribe('x', () => { function t() {} })\n",
			nil},
		{"dynamic import is not an import", "javascript", "const m = import('./m')\n",
			[]Symbol{sym("m", "const", 1, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Outline(tt.lang, []byte(tt.src), 0))
		})
	}
}

func TestOutlineTrickyInputs(t *testing.T) {
	t.Run("code-looking text in strings, comments, templates and regexes", func(t *testing.T) {
		src := "const a = 'function f() {}';\n" +
			"const b = \"class C {}\";\n" +
			"// function g() {}\n" +
			"/*\nclass D {}\nfunction h() {}\n*/\n" +
			"const c = " + bt + "\nfunction i() {}\n${" + bt + "nested ${x} " + bt + "}\nclass E {}\n" + bt + ";\n" +
			"const re = /function j() {}/;\n" +
			"function real() {}\n"
		got := Outline("javascript", []byte(src), 0)
		assert.Equal(t, []Symbol{
			sym("a", "const", 1, 0), sym("b", "const", 2, 0), sym("c", "const", 8, 0),
			sym("re", "const", 13, 0), sym("real", "function", 14, 0),
		}, got)
	})
	t.Run("python strings and comments", func(t *testing.T) {
		src := "x = '''\ndef fake(): pass\n'''\n# def comment(): pass\ns = \"def nope():\"\ncall(\n    def_arg=1,\n)\ndef real():\n    pass\n"
		assert.Equal(t, []Symbol{sym("real", "function", 9, 0)}, Outline("python", []byte(src), 0))
	})
	t.Run("CRLF files", func(t *testing.T) {
		crlf := func(s string) []byte { return []byte(strings.ReplaceAll(s, "\n", "\r\n")) }
		assert.Equal(t, tsxComponentSymbols, Outline("tsx", crlf(tsxComponentFile), 0))
		assert.Equal(t, Outline("python", []byte(pyFile), 0), Outline("python", crlf(pyFile), 0))
		assert.Equal(t, Outline("css", []byte(cssFile), 0), Outline("css", crlf(cssFile), 0))
		assert.Equal(t, Outline("html", []byte(htmlFile), 0), Outline("html", crlf(htmlFile), 0))
		assert.Equal(t, Outline("json", []byte(packageJSON), 0), Outline("json", crlf(packageJSON), 0))
		assert.Equal(t, Outline("go", []byte(goFile), 0), Outline("go", crlf(goFile), 0))
		assert.Equal(t, []Symbol{sym("A", "heading", 1, 0), sym("B", "heading", 3, 1)},
			Outline("markdown", crlf("# A\n\n## B\n"), 0))
	})
	t.Run("minified one-line JS", func(t *testing.T) {
		var b strings.Builder
		for i := 0; i < 5000; i++ {
			b.WriteString("var a" + strings.Repeat("x", i%7) + "=function(e){return e/2+/x[/]/.test(e)?`${e}`:'}'};")
		}
		got := Outline("javascript", []byte(b.String()), 0)
		assert.Len(t, got, DefaultMaxSymbols)
		for _, s := range got {
			assert.Equal(t, 1, s.Line)
		}
	})
	t.Run("max is respected", func(t *testing.T) {
		var b strings.Builder
		for i := 0; i < 50; i++ {
			b.WriteString("function f() {}\n")
		}
		assert.Len(t, Outline("javascript", []byte(b.String()), 7), 7)
		assert.Len(t, Outline("go", []byte("package p\n"+strings.Repeat("func f() {}\n", 50)), 3), 3)
		assert.Len(t, Outline("json", []byte(packageJSON), 2), 2)
	})
	t.Run("go with a syntax error keeps what parsed", func(t *testing.T) {
		got := Outline("go", []byte("package p\n\nfunc A() {}\n\nfunc B( {\n"), 0)
		assert.Equal(t, sym("A", "function", 3, 0), got[0])
	})
	t.Run("malformed JSON stops but keeps what it found", func(t *testing.T) {
		// "b" is seen before the stray "@"; nothing after it is.
		assert.Equal(t, []Symbol{sym("a", "key", 1, 0), sym("b", "key", 1, 0)},
			Outline("json", []byte(`{"a": 1, "b" @ 2, "c": 3}`), 0))
	})
	t.Run("unclosed everything", func(t *testing.T) {
		for _, lang := range allLanguages {
			assert.NotPanics(t, func() {
				Outline(lang, []byte("<h1 id=\"x\n{\"a\n`${'\n/*\n'''\nclass X(\n"), 0)
			})
		}
	})
}

func TestLanguage(t *testing.T) {
	tests := map[string]string{
		"src/App.tsx": "tsx", "src/main.ts": "typescript", "types.d.ts": "typescript",
		"a/b.jsx": "jsx", "vite.config.mjs": "javascript", "x.cjs": "javascript",
		"index.html": "html", "styles/app.CSS": "css", "a.scss": "scss",
		"package.json": "json", ".prettierrc": "json", "main.go": "go", "app.py": "python",
		"README.md": "markdown", "ci.yml": "yaml", "pyproject.toml": "toml",
		"run.sh": "shell", ".bashrc": "shell", "notes.txt": "text", "Dockerfile": "text",
		"Makefile": "text", ".env.local": "text", `src\win\App.tsx`: "tsx",
		"logo.png": "", "font.woff2": "", "archive.tar.gz": "", "noext": "",
	}
	for p, want := range tests {
		assert.Equal(t, want, Language(p), p)
	}
}

// allLanguages are the languages Outline understands.
var allLanguages = []string{"typescript", "tsx", "javascript", "jsx", "css", "scss", "html", "json",
	"go", "python", "markdown", "yaml", "toml", "shell", "text", ""}
