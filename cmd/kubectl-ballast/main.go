// Command kubectl-ballast is the kubectl plugin of Ballast (`kubectl ballast ...`): profiles,
// explain, enroll and node. The code lives in pkg/kubectl/ballast.
package main

import (
	"os"

	"github.com/ballastk8s/ballast/pkg/kubectl/ballast"
)

func main() {
	os.Exit(ballast.Main(os.Args[1:], ballast.StdStreams()))
}
