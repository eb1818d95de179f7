package core

import (
	"strings"
	"unicode/utf8"
)

// MaxTitleRunes bounds titles made from text a user wrote (a chat session
// named after its first prompt, a checkpoint after its run's prompt): long
// enough to tell them apart in a list, short enough for one line.
const MaxTitleRunes = 80

// Title makes a one-line title of free text: its first non-blank line,
// trimmed, cut to max runes (never inside a character) with "…" marking
// the cut. Empty text gives "".
func Title(text string, max int) string {
	var line string
	for l := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	if utf8.RuneCountInString(line) <= max {
		return line
	}
	return strings.TrimSpace(string([]rune(line)[:max-1])) + "…"
}
