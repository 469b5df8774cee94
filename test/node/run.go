package node

import (
	"context"
	"fmt"
	"os/exec"
)

// run runs a short command and returns its combined output.
func run(ctx context.Context, bin string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %v: %w: %s", bin, args, err, out)
	}
	return string(out), nil
}
