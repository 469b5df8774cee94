// Package ballast is the kubectl plugin `kubectl ballast`: a view of Ballast's profiles
// across the cluster (profiles), why a pod is sized the way it is (explain), bulk enrollment
// of workloads (enroll, SPEC §14), and the node agent's debug view (node). It follows
// kubectl's conventions: the standard connection flags of k8s.io/cli-runtime, -n/-A,
// -o table|wide|json|yaml, shell completion and exit codes (0 success, 1 usage or
// prerequisite error, 2 when enroll reports a FAIL row).
package ballast

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitUsage = 1 // usage or prerequisite error
	ExitFail  = 2 // enroll: at least one FAIL row
)

// exitError carries an exit code out of a command; the message is already printed when
// silent is true.
type exitError struct {
	code   int
	silent bool
	err    error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// StdStreams are the process's standard streams.
func StdStreams() genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Main runs the plugin with args (without the program name) and returns the exit code.
// SIGINT and SIGTERM cancel the command's context (enroll prints its breadcrumb then).
func Main(args []string, streams genericiooptions.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, streams)
}

// Run is Main with a caller-provided context, for tests.
func Run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.silent && ee.err != nil {
			fmt.Fprintln(streams.ErrOut, "error:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(streams.ErrOut, "error:", err)
	return ExitUsage
}

// globals are the flags every subcommand shares.
type globals struct {
	config        *genericclioptions.ConfigFlags
	allNamespaces bool
	streams       genericiooptions.IOStreams
}

// NewCommand builds the command tree.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	g := &globals{config: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:   "ballast",
		Short: "See and act on Ballast's right-sizing from kubectl",
		Long: `kubectl ballast shows what Ballast knows and does:

  profiles   every WorkloadProfile: requests vs recommendation vs usage, and the saving
  explain    why a pod (or a Deployment's next pod) gets the requests and limits it gets
  enroll     add the Ballast mode label to Deployments, StatefulSets and DaemonSets
  node       what the node agent on a node sees (its debug view, through the API server)
  diff       the resources Ballast recommends, as a diff of your manifests (or --write)
  export     kustomize patches setting the recommended resources, one per workload
  report     what right-sizing saves: requested vs recommended vs used, and its cost`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl ballast"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	g.config.AddFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVarP(&g.allNamespaces, "all-namespaces", "A", false,
		"across all namespaces (the default of profiles and enroll)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: fmt.Errorf("%w\nSee '%s --help' for usage.", err, c.CommandPath())}
	})
	root.AddCommand(newProfilesCommand(g), newExplainCommand(g), newEnrollCommand(g), newNodeCommand(g),
		newDiffCommand(g), newExportCommand(g), newReportCommand(g))
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// namespace returns the namespace selected by -n, "" for all namespaces (-A, or no -n
// when allByDefault).
func (g *globals) namespace(cmd *cobra.Command, allByDefault bool) (string, error) {
	if g.allNamespaces {
		return "", nil
	}
	if f := cmd.Flags().Lookup("namespace"); f != nil && f.Changed {
		return *g.config.Namespace, nil
	}
	if allByDefault {
		return "", nil
	}
	ns, _, err := g.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", &exitError{code: ExitUsage, err: err}
	}
	return ns, nil
}

func (g *globals) out() io.Writer { return g.streams.Out }
