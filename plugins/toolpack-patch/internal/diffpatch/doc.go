// Package diffpatch parses patches and applies them in memory.
//
// Two formats are understood: unified diffs (git diff, git log -p, git format-patch,
// diff -u) and the "*** Begin Patch" format of coding agents. Parse picks the format;
// Apply computes the new content of every touched file without writing anything, so a
// caller can write all or nothing.
//
// Hunk counts. A unified hunk's body normally matches its header's line counts, as git
// requires. Models write headers by hand and get the counts wrong, so a body that is
// shorter or longer than its header says is read up to the next hunk or file header and
// recounted (empty lines just before that boundary are separators); a body with lines
// that are not diff lines is still a parse error.
//
// Locating hunks. A hunk is found by its old side (context and removed lines). A unified
// hunk is tried first at its stated line (shifted by the drift of the previous hunk, since
// an edit above the patched region moves every hunk alike), then anywhere in the file. An
// exact match (ignoring a trailing CR) wins over fuzzy ones; failing that, trailing
// whitespace is ignored, then all leading/trailing whitespace with inner runs collapsed
// (indentation drift, tabs against spaces). After a fuzzy match, removed lines are removed
// and context lines are kept as the file has them; added lines are inserted as given.
//
// Several candidates at the same level: a unified hunk takes the one strictly nearest its
// expected line; otherwise the hunk fails with PATCH_CONTEXT_AMBIGUOUS. A begin-patch chunk
// has no line numbers: it is searched at or after its @@ anchor line (several @@ lines
// form a chain, each searched after the previous), and is ambiguous when the anchors leave
// more than one place. "*** End of File" chunks must match at the very end.
//
// Pure insertions (no old-side lines): a unified hunk inserts after its stated line
// ("-5,0" inserts after line 5, without drift correction beyond that of earlier hunks); a
// begin-patch chunk inserts after its anchor line, or at the end of the file when it has
// no anchor or says "*** End of File".
//
// Hunks are applied in file order. Two hunks claiming the same old lines fail with
// PATCH_HUNKS_OVERLAP. Any failing hunk fails its file, and any failing file fails the
// whole patch: Apply then returns an *ApplyError listing every failure, each with a line
// window of the current file to re-read.
//
// Line endings. Added lines take the file's dominant ending (LF or CRLF); lines are
// compared ignoring a trailing CR. A unified hunk that reaches the end of the file decides
// whether the result ends with a line break ("\ No newline at end of file"); otherwise the
// file keeps its state. Created files end with a line break unless the patch says
// otherwise, and use CRLF only when every added line of the patch text did.
//
// Files. A create fails with PATCH_FILE_EXISTS when the file exists; modify, delete and
// rename fail with PATCH_FILE_NOT_FOUND when it does not, and a rename onto an existing
// file fails with PATCH_FILE_EXISTS. A unified delete that carries the old content must
// match the file (whitespace-insensitively). A path named twice applies in sequence.
// Binary and copy patches, absolute paths and paths leaving the root are parse errors.
package diffpatch
