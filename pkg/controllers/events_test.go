package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	tests := map[string]struct {
		in      string
		wantLen int
	}{
		"short":              {in: "ok", wantLen: 2},
		"exactly the limit":  {in: strings.Repeat("a", maxNoteLength), wantLen: maxNoteLength},
		"ascii over":         {in: strings.Repeat("a", maxNoteLength+1), wantLen: maxNoteLength},
		"rune across cut":    {in: "a" + strings.Repeat("é", maxNoteLength), wantLen: maxNoteLength},
		"four-byte runes":    {in: strings.Repeat("🏃", maxNoteLength), wantLen: maxNoteLength - 1},
		"three-byte at edge": {in: strings.Repeat("a", maxNoteLength-4) + "€€", wantLen: maxNoteLength - 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Truncate(tc.in)
			if !utf8.ValidString(got) {
				t.Errorf("truncate returned invalid UTF-8: %q", got[max(0, len(got)-8):])
			}
			if len(got) != tc.wantLen {
				t.Errorf("len(truncate) = %d, want %d", len(got), tc.wantLen)
			}
			if len(tc.in) > maxNoteLength && !strings.HasSuffix(got, "...") {
				t.Errorf("truncated note does not end in an ellipsis: %q", got[len(got)-8:])
			}
			if !strings.HasPrefix(tc.in, strings.TrimSuffix(got, "...")) {
				t.Errorf("truncate changed the kept text")
			}
		})
	}
}
