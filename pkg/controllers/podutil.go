package controllers

import (
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
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

// IsTerminal reports whether the pod ran to its end.
func IsTerminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}
