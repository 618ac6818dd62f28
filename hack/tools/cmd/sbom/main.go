// Command sbom writes the SPDX 2.3 document (JSON) of a Go binary to stdout,
// from the build information in it (hack/tools/sbom); make release writes
// one per binary:
//
//	sbom --name kubectl-tandem_linux_amd64 --version v0.40.0 --created 1764892800 \
//	  --namespace https://github.com/tandem-scheduler/tandem/releases/download/v0.40.0 BINARY
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tandem-scheduler/tandem/hack/tools/sbom"
)

func main() {
	name := flag.String("name", "", "the binary's name in the release (default: its path)")
	version := flag.String("version", "", "the binary's version (default: its build information's)")
	created := flag.Int64("created", 0, "creation time, Unix seconds (a release uses its commit's time, SOURCE_DATE_EPOCH)")
	namespace := flag.String("namespace", "https://github.com/tandem-scheduler/tandem/spdx", "URI prefix of the document's namespace")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: sbom [--name NAME] [--version V] [--created UNIX] [--namespace URI] BINARY")
		os.Exit(2)
	}
	path := flag.Arg(0)
	if *name == "" {
		*name = path
	}
	doc, err := sbom.For(path, *name, *version, time.Unix(*created, 0), *namespace)
	if err == nil {
		var out []byte
		if out, err = doc.JSON(); err == nil {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}
