package ballast

import "github.com/spf13/cobra"

func newNodeCommand(g *globals) *cobra.Command   { return &cobra.Command{Use: "node"} }
func (o *profilesOptions) completeProfiles(cmd *cobra.Command) ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveNoFileComp
}
