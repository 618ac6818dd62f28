package contract

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The contract is a leaf: the standard library, k8s.io/api and
// apimachinery only, so that every reader (kubectl-tandem too, a
// module without the scheduler) can import it.
func TestImportsOnlyTheAPI(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first := strings.Split(path, "/")[0]
			if !strings.Contains(first, ".") {
				continue // the standard library
			}
			if !strings.HasPrefix(path, "k8s.io/api/") && !strings.HasPrefix(path, "k8s.io/apimachinery/") {
				t.Errorf("%s imports %s: the contract may import only the standard library, k8s.io/api and k8s.io/apimachinery", name, path)
			}
		}
	}
	if files == 0 {
		t.Fatal("no source files read")
	}
}
