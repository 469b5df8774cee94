// Command ballast-control is Ballast's control plane: policies, profiles, the admission
// webhook and in-place resizes. `ballast-control apply-crds` installs the CRDs. Every flag
// falls back to the environment variable BALLAST_<FLAG> (e.g. BALLAST_LOG_LEVEL).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ballastk8s/ballast/pkg/cli"
	"github.com/ballastk8s/ballast/pkg/control/app"
)

func main() {
	o := app.NewOptions()
	o.AddFlags(flag.CommandLine)
	envErr := cli.ApplyEnv(flag.CommandLine, "BALLAST")
	flag.Parse()
	if err := errors.Join(envErr, o.Validate()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logs, err := o.SetupLogging()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if limit, err := cli.SetMemoryLimit(cli.ControlProgramPages); err != nil {
		ctrl.Log.Error(err, "no Go memory limit set")
	} else if limit > 0 {
		ctrl.Log.Info("Go memory limit set from the container's", "bytes", limit)
	}
	ctx := ctrl.SetupSignalHandler()
	if flag.Arg(0) == "check-webhook" { // helm test; needs no API access
		if err := checkWebhook(ctx, flag.Arg(1), flag.Arg(2)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	cfg, err := ctrl.GetConfig()
	if err == nil && flag.Arg(0) == "apply-crds" {
		err = app.ApplyCRDs(ctx, cfg)
	} else if err == nil && flag.NArg() > 0 {
		err = fmt.Errorf("unknown subcommand %q (known: apply-crds, check-webhook)", flag.Arg(0))
	} else if err == nil {
		var a *app.App
		if a, err = app.NewApp(ctx, o, cfg, app.Deps{Logs: logs}); err == nil {
			err = a.Manager.Start(ctx)
		}
	}
	if err != nil {
		ctrl.Log.Error(err, "ballast-control failed")
		os.Exit(1)
	}
}
