package diffpatch

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runGitApply writes files into dir, applies patch there with git apply and returns the
// resulting tree. dir is outside any repository (GIT_CEILING_DIRECTORIES makes sure git
// does not find one above it), so git apply works on plain files.
func runGitApply(dir string, files map[string][]byte, patch []byte, args []string) (map[string][]byte, error) {
	tree := filepath.Join(dir, "tree")
	for p, b := range files {
		full := filepath.Join(tree, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return nil, err
	}
	patchFile := filepath.Join(dir, "patch.diff")
	if err := os.WriteFile(patchFile, patch, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("git", append(append([]string{"apply"}, args...), patchFile)...)
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, errors.New(strings.TrimSpace(string(out)) + ": " + err.Error())
	}
	return readTree(tree)
}

// readTree returns every regular file under root by slash path.
func readTree(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	return out, err
}

// applyToTree runs our Apply against an in-memory tree and returns the resulting tree.
func applyToTree(patchText string, files map[string][]byte) (map[string][]byte, error) {
	p, err := Parse(patchText)
	if err != nil {
		return nil, err
	}
	changes, err := Apply(p, func(path string) ([]byte, bool, error) {
		b, ok := files[path]
		return b, ok, nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for k, v := range files {
		out[k] = v
	}
	for _, c := range changes {
		switch c.Op {
		case OpDelete:
			delete(out, c.Path)
		case OpRename:
			delete(out, c.OldPath)
			out[c.Path] = c.Content
		default:
			out[c.Path] = c.Content
		}
	}
	return out, nil
}

// TestGolden applies every corpus case with our Apply and with git apply and requires the
// same resulting tree.
func TestGolden(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	if *updateCorpus {
		generateCorpus(t)
	}
	cases, err := os.ReadDir(corpusDir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 60, "corpus too small; regenerate with -update-corpus")
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join(corpusDir, c.Name())
			patch, err := os.ReadFile(filepath.Join(dir, "patch.diff"))
			require.NoError(t, err)
			source, _ := os.ReadFile(filepath.Join(dir, "source.txt"))
			var args []string
			if a, err := os.ReadFile(filepath.Join(dir, "args.txt")); err == nil {
				args = strings.Fields(string(a))
			}
			stored, err := readTree(filepath.Join(dir, "before"))
			if errors.Is(err, fs.ErrNotExist) {
				stored, err = map[string][]byte{}, nil
			}
			require.NoError(t, err)
			before := map[string][]byte{}
			for p, b := range stored {
				name, ok := strings.CutSuffix(p, preImageSuffix)
				require.True(t, ok, "pre-image %s lacks the %s suffix", p, preImageSuffix)
				before[name] = b
			}
			want, err := runGitApply(t.TempDir(), before, patch, args)
			require.NoError(t, err, "git apply failed on case %s (%s)", c.Name(), source)
			got, err := applyToTree(string(patch), before)
			require.NoError(t, err, "Apply failed on case %s (%s)", c.Name(), source)
			compareTrees(t, c.Name()+" ("+strings.TrimSpace(string(source))+")", want, got)
		})
	}
}

// compareTrees fails with a readable diff for every file that differs.
func compareTrees(t *testing.T, name string, want, got map[string][]byte) {
	t.Helper()
	var paths []string
	seen := map[string]bool{}
	for p := range want {
		paths, seen[p] = append(paths, p), true
	}
	for p := range got {
		if !seen[p] {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		w, inWant := want[p]
		g, inGot := got[p]
		switch {
		case inWant && !inGot:
			t.Errorf("case %s: %s exists after git apply but not after Apply", name, p)
		case !inWant && inGot:
			t.Errorf("case %s: %s exists after Apply but not after git apply", name, p)
		case !bytes.Equal(w, g):
			t.Errorf("case %s: %s differs (-git apply +Apply):\n%s", name, p, lineDiff(w, g))
		}
	}
}

// lineDiff shows the first differing lines of two contents with a little context; enough
// to see what went wrong without a diff library.
func lineDiff(a, b []byte) string {
	al := strings.SplitAfter(string(a), "\n")
	bl := strings.SplitAfter(string(b), "\n")
	i := 0
	for i < len(al) && i < len(bl) && al[i] == bl[i] {
		i++
	}
	var out strings.Builder
	const context = 3 // lines shown before and after the first difference
	for j := max(i-context, 0); j < i; j++ {
		out.WriteString("  " + strings.TrimSuffix(al[j], "\n") + "\n")
	}
	for j := i; j < min(i+context*2, len(al)); j++ {
		out.WriteString("- " + strconvQuote(al[j]) + "\n")
	}
	for j := i; j < min(i+context*2, len(bl)); j++ {
		out.WriteString("+ " + strconvQuote(bl[j]) + "\n")
	}
	return out.String()
}

func strconvQuote(s string) string { return quote(s) }
