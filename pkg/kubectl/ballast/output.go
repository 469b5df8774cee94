package ballast

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats of -o.
const (
	outTable = ""
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
)

func addOutputFlag(cmd *cobra.Command, dst *string, formats ...string) {
	cmd.Flags().StringVarP(dst, "output", "o", "", "output format: "+strings.Join(formats, "|"))
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return formats, cobra.ShellCompDirectiveNoFileComp
	})
}

func checkOutput(format string, allowed ...string) error {
	if format == "" || format == "table" {
		return nil
	}
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return usageError("unknown output format %q: must be one of table|%s", format, strings.Join(allowed, "|"))
}

// printStructured writes v as JSON (indented, with a final newline) or YAML.
func printStructured(w io.Writer, format string, v any) error {
	switch format {
	case outJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case outYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("not a structured format: %q", format)
}

// table writes aligned columns like kubectl get (three spaces between columns).
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table { return &table{tw: tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)} }

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }
