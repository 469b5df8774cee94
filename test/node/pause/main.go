// Command pause is the sandbox ("pause") image of the real-node test tier: containerd
// starts it as each pod's first process, and it only waits for the signal that ends the
// pod. It is built into an image by hack/imagebuild and is never part of a product binary.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
