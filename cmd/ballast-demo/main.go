// Command ballast-demo runs Ballast's measure → profile → apply loop on this machine
// (`make demo`): real control plane and Ballast binaries, simulated kubelets and kernels.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ballastk8s/ballast/test/sandbox"
)

func main() {
	o := sandbox.NewDemoOptions()
	o.AddFlags(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sandbox.RunDemo(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}
