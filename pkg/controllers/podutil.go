package controllers

import (
	"unicode/utf8"
)

// maxNoteLength is the events API's limit on a note.
const maxNoteLength = 1024

// Truncate shortens s to at most maxNoteLength bytes for an event note,
// cutting at a rune boundary so that the note stays valid UTF-8.
func Truncate(s string) string {
	if len(s) <= maxNoteLength {
		return s
	}
	const ellipsis = "..."
	cut := maxNoteLength - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
