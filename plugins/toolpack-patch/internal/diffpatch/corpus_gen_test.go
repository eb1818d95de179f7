package diffpatch

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// updateCorpus regenerates testdata/corpus from this repository's git history:
//
//	go test ./plugins/toolpack-patch/internal/diffpatch/ -run TestGolden -update-corpus
var updateCorpus = flag.Bool("update-corpus", false, "regenerate testdata/corpus from the repository's git history")

// Corpus budget: small cases keep the checked-in corpus under ~3 MB and the test fast.
const (
	corpusDir          = "testdata/corpus"
	maxCasePatchBytes  = 24 << 10  // a larger patch is a big feature commit; its parts are cases anyway
	maxCaseBeforeBytes = 48 << 10  // pre-images of one case
	corpusBudgetBytes  = 1_700_000 // room left below 3 MB for the derived cases
	maxBaseCases       = 110
	maxStaleCases      = 24
	maxDriftCases      = 12
	maxRenameCases     = 6 // the history has no renames, so a few are derived
)

// preImageSuffix is appended to every stored pre-image so that old versions of .go files
// are not picked up by the repository's gofmt check (make lint runs gofmt on every
// tracked .go file, testdata included).
const preImageSuffix = ".pre"

// corpusCase is one generated case before it is written.
type corpusCase struct {
	source string            // what it was made from, for humans
	patch  string            // the patch text
	before map[string][]byte // pre-images by path
	args   []string          // extra git apply flags
}

func (c *corpusCase) size() int {
	n := len(c.patch)
	for _, b := range c.before {
		n += len(b)
	}
	return n
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// generateCorpus walks the history of the repository this package lives in and writes
// cases for commits whose diffs touch only text files.
func generateCorpus(t *testing.T) {
	root := strings.TrimSpace(gitOut(t, ".", "rev-parse", "--show-toplevel"))
	var base []*corpusCase
	for _, line := range strings.Split(strings.TrimSpace(gitOut(t, root, "log", "--no-merges", "--format=%H %P")), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue // the root commit has no parent to diff against
		}
		base = append(base, commitCases(t, root, f[0])...)
	}
	// Prefer small cases, but take whole commits (with their git log -p header and often
	// several files) first: they exercise more.
	sort.SliceStable(base, func(i, j int) bool {
		wi, wj := strings.HasPrefix(base[i].patch, "commit "), strings.HasPrefix(base[j].patch, "commit ")
		if wi != wj {
			return wi
		}
		return base[i].size() < base[j].size()
	})
	var picked []*corpusCase
	total := 0
	for _, c := range base {
		if len(picked) == maxBaseCases || total+c.size() > corpusBudgetBytes {
			continue
		}
		if err := gitApplyCheck(c); err != nil {
			t.Logf("skip %s: git apply: %v", c.source, err)
			continue
		}
		picked = append(picked, c)
		total += c.size()
	}
	var derived []*corpusCase
	stale, drift, renames := 0, 0, 0
	for i, c := range picked {
		if len(c.before) != 1 || strings.Contains(c.patch, "\nrename from ") || strings.Contains(c.patch, "\ndeleted file mode") {
			continue
		}
		if renames < maxRenameCases && !strings.HasPrefix(c.patch, "commit ") {
			if r := renameCase(c); r != nil && gitApplyCheck(r) == nil {
				derived = append(derived, r)
				renames++
			}
		}
		if stale < maxStaleCases {
			shift := []int{3, -2, 11, -1}[i%4]
			if s := shiftHunks(c, shift); s != nil && gitApplyCheck(s) == nil {
				derived = append(derived, s)
				stale++
			}
		}
		if drift < maxDriftCases {
			if d := driftIndent(c); d != nil && gitApplyCheck(d) == nil {
				derived = append(derived, d)
				drift++
			}
		}
	}
	all := append(picked, derived...)
	if err := os.RemoveAll(corpusDir); err != nil {
		t.Fatal(err)
	}
	for i, c := range all {
		dir := filepath.Join(corpusDir, fmt.Sprintf("%03d", i+1))
		write := func(name string, b []byte) {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("patch.diff", []byte(c.patch))
		write("source.txt", []byte(c.source+"\n"))
		if len(c.args) > 0 {
			write("args.txt", []byte(strings.Join(c.args, " ")+"\n"))
		}
		for p, b := range c.before {
			write("before/"+p+preImageSuffix, b)
		}
	}
	t.Logf("wrote %d cases (%d from history, %d stale, %d drift, %d rename)", len(all), len(picked), stale, drift, renames)
}

// commitCases returns the whole-commit case (with the commit header, as git log -p shows
// it) and one case per file of a commit.
func commitCases(t *testing.T, root, commit string) []*corpusCase {
	numstat := gitOut(t, root, "show", "--format=", "--numstat", "-M", commit)
	for _, l := range strings.Split(numstat, "\n") {
		if strings.HasPrefix(l, "-\t-\t") {
			return nil // a binary file: we do not apply those
		}
	}
	type entry struct{ status, old, new string }
	var entries []entry
	for _, l := range strings.Split(strings.TrimSpace(gitOut(t, root, "show", "--format=", "--name-status", "-M", commit)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 2 {
			continue
		}
		e := entry{status: f[0][:1], old: f[1], new: f[len(f)-1]}
		for _, p := range []string{e.old, e.new} {
			// A dotfile (.gitignore) under testdata would change how git treats the
			// checked-in corpus itself.
			if strings.HasPrefix(p, ".") || strings.Contains(p, "/.") {
				return nil
			}
		}
		if e.status != "M" && e.status != "A" && e.status != "D" && e.status != "R" {
			return nil
		}
		entries = append(entries, e)
	}
	pre := func(e entry) (map[string][]byte, bool) {
		m := map[string][]byte{}
		if e.status == "A" {
			return m, true
		}
		b := gitOut(t, root, "show", commit+"^:"+e.old)
		if len(b) > maxCaseBeforeBytes {
			return nil, false
		}
		m[e.old] = []byte(b)
		return m, true
	}
	var out []*corpusCase
	whole := &corpusCase{source: "commit " + commit, patch: gitOut(t, root, "show", "-M", commit), before: map[string][]byte{}}
	for _, e := range entries {
		m, ok := pre(e)
		if !ok {
			whole = nil
			break
		}
		for k, v := range m {
			whole.before[k] = v
		}
		paths := []string{e.new}
		if e.status == "R" {
			paths = []string{e.old, e.new}
		}
		c := &corpusCase{source: "commit " + commit + " file " + e.new, before: m,
			patch: gitOut(t, root, append([]string{"show", "--format=", "-M", commit, "--"}, paths...)...)}
		if len(c.patch) <= maxCasePatchBytes && len(entries) > 1 {
			out = append(out, c)
		}
	}
	if whole != nil && len(whole.patch) <= maxCasePatchBytes && whole.size() <= 2*maxCaseBeforeBytes {
		out = append(out, whole)
	}
	return out
}

var hunkHeaderRE = regexp.MustCompile(`(?m)^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@`)

// shiftHunks returns a copy of c whose hunk headers claim lines shifted by n, as in a
// patch made against an older version of the file; nil when a start would drop below 1.
func shiftHunks(c *corpusCase, n int) *corpusCase {
	ok := true
	patch := hunkHeaderRE.ReplaceAllStringFunc(c.patch, func(h string) string {
		m := hunkHeaderRE.FindStringSubmatch(h)
		o, _ := strconv.Atoi(m[1])
		nw, _ := strconv.Atoi(m[3])
		if o == 0 || nw == 0 {
			return h // a created or emptied file: its zero start is not a position
		}
		if o+n < 1 || nw+n < 1 {
			ok = false
			return h
		}
		return fmt.Sprintf("@@ -%d%s +%d%s @@", o+n, m[2], nw+n, m[4])
	})
	if !ok || patch == c.patch {
		return nil
	}
	return &corpusCase{source: fmt.Sprintf("%s, hunk headers shifted by %+d", c.source, n), patch: patch, before: c.before}
}

// driftIndent returns a copy of c whose pre-image is indented with spaces instead of tabs,
// to be applied with --ignore-whitespace; nil if that changes nothing.
func driftIndent(c *corpusCase) *corpusCase {
	before := map[string][]byte{}
	changed := false
	for p, b := range c.before {
		lines := bytes.Split(b, []byte("\n"))
		for i, l := range lines {
			tabs := len(l) - len(bytes.TrimLeft(l, "\t"))
			if tabs > 0 {
				lines[i] = append(bytes.Repeat([]byte("    "), tabs), l[tabs:]...)
				changed = true
			}
		}
		before[p] = bytes.Join(lines, []byte("\n"))
	}
	if !changed {
		return nil
	}
	return &corpusCase{source: c.source + ", pre-image re-indented with spaces", patch: c.patch, before: before, args: []string{"--ignore-whitespace"}}
}

// renameCase turns a single-file modification into a rename with the same edits, the way
// git diff -M writes it.
func renameCase(c *corpusCase) *corpusCase {
	var old string
	for p := range c.before {
		old = p
	}
	head, body, ok := strings.Cut(c.patch, "\n--- a/"+old+"\n+++ b/"+old+"\n")
	if !ok || !strings.HasPrefix(head, "diff --git ") {
		return nil
	}
	dir, file := path.Split(old)
	newPath := dir + "renamed_" + file
	patch := fmt.Sprintf("diff --git a/%s b/%s\nsimilarity index 90%%\nrename from %s\nrename to %s\n--- a/%s\n+++ b/%s\n%s",
		old, newPath, old, newPath, old, newPath, body)
	return &corpusCase{source: c.source + ", turned into a rename to " + newPath, patch: patch, before: c.before}
}

// gitApplyCheck runs git apply on the case in a scratch directory.
func gitApplyCheck(c *corpusCase) error {
	dir, err := os.MkdirTemp("", "diffpatch-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	_, err = runGitApply(dir, c.before, []byte(c.patch), c.args)
	return err
}
