// Command stax is a live sampling profiler for Linux that names JIT'd code.
package main

import (
	"github.com/stax-profiler/stax/internal/cli"
	"github.com/stax-profiler/stax/internal/launch"
)

func main() {
	launch.RunGateIfRequested()
	cli.Run()
}
