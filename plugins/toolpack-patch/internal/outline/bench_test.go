package outline

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// genTSX writes a React module of about n lines: components, hooks, a class
// and helpers, the mix an outline sees in a real app.
func genTSX(n int) []byte {
	var b strings.Builder
	b.WriteString("import React, { useState, useEffect } from \"react\";\nimport { api } from \"../api\";\n\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `export interface Item%[1]dProps {
  id: number;
  label?: string;
}

export const Item%[1]d = ({ id, label = "item %[1]d" }: Item%[1]dProps) => {
  const [open, setOpen] = useState(false);
  useEffect(() => {
    api.get(`+"`/items/${id}`"+`).then((r) => setOpen(r.ok));
  }, [id]);
  // toggles the panel; "function" in a comment is not a symbol
  const handleToggle%[1]d = () => setOpen(!open);
  return (
    <div className="item" onClick={handleToggle%[1]d}>
      {label} / {open ? "open" : "closed"}
    </div>
  );
};

export function useItem%[1]d(id: number) {
  return useState(id * 2)[0] / 3;
}

class Store%[1]d {
  private items = new Map<number, string>();
  get(id: number) { return this.items.get(id); }
  set = (id: number, v: string) => { this.items.set(id, v); };
}

`, i)
	}
	return []byte(b.String())
}

// genGo writes a Go file of about n lines.
func genGo(n int) []byte {
	var b strings.Builder
	b.WriteString("package bench\n\nimport (\n\t\"errors\"\n\t\"fmt\"\n)\n\n")
	for i := 0; strings.Count(b.String(), "\n") < n; i++ {
		fmt.Fprintf(&b, `// ErrItem%[1]d is returned when item %[1]d is missing.
var ErrItem%[1]d = errors.New("item %[1]d")

const limit%[1]d = %[1]d

// Item%[1]d is one thing.
type Item%[1]d struct {
	ID   int
	Name string
}

// Name returns the name.
func (it *Item%[1]d) Label() string {
	if it == nil {
		return fmt.Sprint(ErrItem%[1]d)
	}
	return it.Name
}

func newItem%[1]d(id int) *Item%[1]d { return &Item%[1]d{ID: id} }

`, i)
	}
	return []byte(b.String())
}

var (
	benchDocsOnce sync.Once
	benchDocs     []Doc
)

// genTree makes 10,000 small files (~3 MB): components, services, styles
// and docs with a vocabulary that makes some terms rare and some common.
func genTree() []Doc {
	benchDocsOnce.Do(func() {
		words := []string{"user", "order", "cart", "invoice", "payment", "session", "profile", "report", "search", "settings"}
		for i := 0; i < 10000; i++ {
			w := words[i%len(words)]
			W := strings.ToUpper(w[:1]) + w[1:]
			var path, body string
			switch i % 4 {
			case 0:
				path = fmt.Sprintf("src/components/%s/%s%dView.tsx", w, W, i)
				body = fmt.Sprintf("import React from \"react\";\nimport { use%[1]s } from \"../../hooks\";\n\nexport function %[1]s%[2]dView({ id }: Props) {\n  const data = use%[1]s(id);\n  const handleSubmit = () => save%[1]s(data);\n  if (!data) return <Spinner />;\n  return (\n    <form onSubmit={handleSubmit} className=\"%[3]s-form\">\n      <h2>{data.title}</h2>\n      <button type=\"submit\">Save</button>\n    </form>\n  );\n}\n", W, i, w)
			case 1:
				path = fmt.Sprintf("src/services/%s%d.ts", w, i)
				body = fmt.Sprintf("import { http } from \"./http\";\n\nexport async function fetch%[1]s(id: string) {\n  const res = await http.get(`/api/%[2]s/${id}`);\n  if (!res.ok) throw new Error(\"cannot load %[2]s \" + id);\n  return res.json();\n}\n\nexport async function save%[1]s(data: %[1]s) {\n  return http.post(\"/api/%[2]s\", data);\n}\n\nexport const %[2]sCacheTTL = %[3]d;\n", W, w, i%600)
			case 2:
				path = fmt.Sprintf("src/styles/%s%d.css", w, i)
				body = fmt.Sprintf(".%[1]s-form {\n  display: grid;\n  gap: 8px;\n}\n\n.%[1]s-form button {\n  padding: 4px 8px;\n}\n\n.%[1]s-form button:hover {\n  background: #eee;\n}\n\n@media (max-width: 600px) {\n  .%[1]s-form { gap: 4px; }\n}\n", w)
			default:
				path = fmt.Sprintf("docs/%s/%d.md", w, i)
				body = fmt.Sprintf("# %[1]s notes %[2]d\n\nThe %[3]s module loads a %[3]s by id and saves edits.\nErrors are shown in a toast; retries back off exponentially.\n\n## Testing\n\nRun the unit tests with npm test. Mock the http client.\n", W, i, w)
			}
			benchDocs = append(benchDocs, Doc{Path: path, Content: []byte(body)})
		}
	})
	return benchDocs
}

func BenchmarkOutlineTSX(b *testing.B) {
	src := genTSX(2000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if len(Outline("tsx", src, 0)) == 0 {
			b.Fatal("no symbols")
		}
	}
}

func BenchmarkOutlineGo(b *testing.B) {
	src := genGo(2000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if len(Outline("go", src, 0)) == 0 {
			b.Fatal("no symbols")
		}
	}
}

func BenchmarkRank10kFiles(b *testing.B) {
	docs := genTree()
	total := 0
	for _, d := range docs {
		total += len(d.Content)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		if len(Rank("save payment form submit handler", docs, 16<<10, 40)) == 0 {
			b.Fatal("no windows")
		}
	}
}

func TestBenchFixtures(t *testing.T) {
	// The generated inputs must be what the benchmarks claim to measure.
	tsx := genTSX(2000)
	lines := strings.Count(string(tsx), "\n")
	if lines < 2000 || lines > 2100 {
		t.Fatalf("tsx fixture has %d lines", lines)
	}
	syms := Outline("tsx", tsx, 10000)
	kinds := map[string]int{}
	for _, s := range syms {
		kinds[s.Kind]++
	}
	for _, k := range []string{"component", "function", "interface", "class", "method", "import"} {
		if kinds[k] == 0 {
			t.Errorf("tsx fixture outline has no %s: %v", k, kinds)
		}
	}
	// One component, hook, interface, class and two methods per block.
	if kinds["component"] != kinds["class"] || kinds["method"] != 2*kinds["class"] {
		t.Errorf("unexpected kinds %v", kinds)
	}
	docs := genTree()
	total := 0
	for _, d := range docs {
		total += len(d.Content)
	}
	if len(docs) != 10000 || total < 2_500_000 || total > 3_500_000 {
		t.Fatalf("tree: %d files, %d bytes", len(docs), total)
	}
}
