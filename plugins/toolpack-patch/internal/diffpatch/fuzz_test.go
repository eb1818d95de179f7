package diffpatch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fuzzContent is the fixed file every fuzzed patch is applied to: a little of everything
// (CRLF, blank lines, indentation, no final newline).
const fuzzContent = "package p\n\nfunc f() {\n\treturn\n}\r\n  x\n\n}\nlast"

// seedCorpus adds up to max corpus patches as seeds.
func seedCorpus(f *testing.F, max int) {
	dirs, _ := filepath.Glob(filepath.Join(corpusDir, "*", "patch.diff"))
	for i, d := range dirs {
		if i == max {
			break
		}
		if b, err := os.ReadFile(d); err == nil {
			f.Add(string(b))
		}
	}
}

// checkParsed asserts the invariants of a successful parse and applies the patch to fixed
// content, which must never panic and must fail only with an *ApplyError.
func checkParsed(t *testing.T, p *Patch) {
	if len(p.Files) == 0 {
		t.Fatal("successful parse without files")
	}
	for _, fp := range p.Files {
		if fp.Path() == "" || (fp.Op != OpCreate && fp.OldPath == "") || (fp.Op != OpDelete && fp.NewPath == "") {
			t.Fatalf("bad paths in %+v", fp)
		}
		for _, h := range fp.Hunks {
			for _, l := range h.Lines {
				if l.Kind != ' ' && l.Kind != '-' && l.Kind != '+' {
					t.Fatalf("bad line kind %q", l.Kind)
				}
			}
		}
	}
	for _, exists := range []bool{true, false} {
		_, err := Apply(p, func(string) ([]byte, bool, error) {
			if !exists {
				return nil, false, nil
			}
			return []byte(fuzzContent), true, nil
		})
		var ae *ApplyError
		if err != nil && !errors.As(err, &ae) {
			t.Fatalf("Apply failed with %T %v", err, err)
		}
	}
}

func FuzzParseUnified(f *testing.F) {
	seedCorpus(f, 40)
	for _, s := range []string{
		"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
		"--- a/f\r\n+++ b/f\r\n@@ -3 +3,0 @@\r\n-x\r\n",
		"diff --git a/x b/y\nrename from x\nrename to y\n",
		"--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+n\n",
		"--- a/p.go\n+++ b/p.go\n@@ -9,2 +9,2 @@\n }\n-last\n+LAST\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseUnified(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("bad parse error %T %v", err, err)
			}
			return
		}
		checkParsed(t, p)
	})
}

func FuzzParseBeginPatch(f *testing.F) {
	for _, s := range []string{
		"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: p.go\n*** Move to: q.go\n@@ func f() {\n-\treturn\n+\treturn nil\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: p.go\n }\n+tail\n*** End of File\n*** Delete File: z\n*** End Patch\n",
		"*** Begin Patch\r\n*** Update File: p\r\n@@ x\r\n@@\r\n+y\r\n\r\n*** End Patch\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseBeginPatch(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("bad parse error %T %v", err, err)
			}
			return
		}
		checkParsed(t, p)
	})
}
