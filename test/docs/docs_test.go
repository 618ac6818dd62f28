// Package docs checks the README and the user guides against the
// repository: the two commands a newcomer runs exist, every relative link
// lands on a file and a heading, and every figure the README quotes from a
// guide is in that guide.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, two directories up.
const root = "../.."

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README's first lines are the two commands a newcomer runs: the demo
// and the tests, both targets of the Makefile.
func TestREADMEStartsWithTheTwoCommands(t *testing.T) {
	lines := strings.Split(read(t, "README.md"), "\n")
	if len(lines) < 6 || lines[2] != "```sh" || !strings.HasPrefix(lines[3], "make demo ") || !strings.HasPrefix(lines[4], "make test ") {
		t.Fatalf("README.md does not open with ```sh, make demo, make test: %q", lines[:min(len(lines), 6)])
	}
	makefile := read(t, "Makefile")
	for _, target := range []string{"demo", "test"} {
		if !regexp.MustCompile(`(?m)^` + target + `:`).MatchString(makefile) {
			t.Errorf("the README's make %s is not a target of the Makefile", target)
		}
	}
}

// documents are the user-facing Markdown files.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "manifests/charts/tandem-scheduler/README.md", "examples/arc/README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		out = append(out, rel)
	}
	return out
}

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	htmlID  = regexp.MustCompile(`<a id="([^"]+)">`)
	fence   = regexp.MustCompile("(?s)\n```.*?\n```")
)

// slug is GitHub's anchor of a heading: lower case, punctuation other than
// hyphens and underscores dropped, spaces to hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors a Markdown file has: its headings' (with
// GitHub's -1, -2 for repeats) and explicit <a id>s.
func anchors(text string) []string {
	text = fence.ReplaceAllString(text, "")
	var out []string
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out = append(out, s+"-"+strconv.Itoa(n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	for _, m := range htmlID.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// Every relative link of the user docs lands on a file of the repository
// and, for an anchor into Markdown, on one of its headings: a renamed
// section or a moved guide breaks the test, not the reader.
func TestRelativeLinksResolve(t *testing.T) {
	for _, doc := range documents(t) {
		text := fence.ReplaceAllString(read(t, doc), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("%s links to %s: %s does not exist", doc, target, path)
				continue
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if !slices.Contains(anchors(read(t, path)), anchor) {
				t.Errorf("%s links to %s: %s has no heading or id %q", doc, target, path, anchor)
			}
		}
	}
}

var figure = regexp.MustCompile(`\b\d+(?:[.,]\d+)*%|\b\d+(?:[.,]\d+)+\b`)

// Every figure a line of the README quotes (decimals, thousands, percents;
// not plain integers, which every doc has) is in the guides that line
// links to: the README quotes the docs'
// measurements, it does not keep figures of its own that drift from them.
func TestREADMEFiguresAreInTheDocsTheyCite(t *testing.T) {
	readme := fence.ReplaceAllString(read(t, "README.md"), "")
	for _, line := range strings.Split(readme, "\n") {
		var cited []string
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			if file, _, _ := strings.Cut(m[1], "#"); strings.HasPrefix(file, "docs/") && strings.HasSuffix(file, ".md") {
				cited = append(cited, read(t, file))
			}
		}
		if len(cited) == 0 {
			continue
		}
		prose := link.ReplaceAllString(line, "]")
		for _, f := range figure.FindAllString(prose, -1) {
			// The figure as a number of its own: not 5% inside 25%, nor 1.03
			// inside 11.03 or 1.035.
			whole := regexp.MustCompile(`(^|[^\d.,])` + regexp.QuoteMeta(f) + `($|[^\d%]|[.,]\D|[.,]$)`)
			if strings.HasSuffix(f, "%") {
				whole = regexp.MustCompile(`(^|[^\d.,])` + regexp.QuoteMeta(f))
			}
			if !slices.ContainsFunc(cited, whole.MatchString) {
				t.Errorf("README.md quotes %s, which the docs it links to do not have:\n%s", f, line)
			}
		}
	}
}
