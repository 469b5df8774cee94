package agent

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvPrefix starts the environment variable every flag falls back to.
const EnvPrefix = "BALLAST_"

// EnvName is the environment variable of a flag: prefix + the name in upper case with '-'
// → '_' (--flush-interval → BALLAST_FLUSH_INTERVAL).
func EnvName(prefix, flagName string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// EnvFallback sets every flag registered on fs whose environment variable (EnvName) is
// set, so the chart can configure the binary without arguments. Call it after registering
// the flags and before fs.Parse: a flag given on the command line still wins. It returns
// one error per value the flag refuses; nothing else is read from the environment. It
// depends on nothing of the agent, so the control plane can share it.
func EnvFallback(fs *flag.FlagSet, prefix string) []error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		env := EnvName(prefix, f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
			}
		}
	})
	return errs
}
