// Command runbox-confine is runbox's confinement trampoline on its own: the
// same code as `runbox __confine` (package confine), in a binary small
// enough to start in a fraction of the time the whole of runbox takes.
// runbox uses it when it finds it next to its own executable; every
// command it confines starts through it, so its start is on the path of
// every command that does not find a pre-started shell.
package main

import (
	"fmt"
	"os"

	"github.com/runbox/runbox/confine"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != confine.Command {
		fmt.Fprintf(os.Stderr, "runbox-confine: run by runbox only (usage: runbox-confine %s POLICY PROGRAM ARGV0 [ARG...])\n", confine.Command)
		os.Exit(2)
	}
	os.Exit(confine.Main(os.Args[2:]))
}
