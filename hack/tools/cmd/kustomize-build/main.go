// Command kustomize-build prints `kustomize build DIR` with the kustomize Go
// module (the same code kubectl's -k runs), so that neither the Makefile nor
// the tests need a kustomize or kubectl binary.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kustomize-build DIR")
		os.Exit(2)
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), os.Args[1])
	if err == nil {
		var out []byte
		if out, err = resources.AsYaml(); err == nil {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustomize-build:", err)
		os.Exit(1)
	}
}
