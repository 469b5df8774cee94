// Package cli holds what both binaries' command lines share: environment fallbacks for
// flags, so the chart can configure either binary through env vars.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvName is the environment variable of flag name under prefix: "BALLAST", "log-level" →
// BALLAST_LOG_LEVEL.
func EnvName(prefix, name string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ApplyEnv sets every flag of fs whose environment variable (EnvName) is set. Call it
// after registering the flags and before fs.Parse, so the command line still wins. It
// reports every unusable value at once.
func ApplyEnv(fs *flag.FlagSet, prefix string) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		env := EnvName(prefix, f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
			}
		}
	})
	return errors.Join(errs...)
}
