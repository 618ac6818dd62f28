// Command hello stands in for tandem-scheduler in the image tests: a small
// static binary, quick to cross-compile.
package main

import "fmt"

func main() { fmt.Println("hello") }
