// Command hermes is the durable state layer and command line of an AI
// agent runtime. See README.md.
package main

import (
	"os"

	"github.com/hermes/hermes/cmd"
)

func main() {
	os.Exit(cmd.Main())
}
