package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/scenario"
	"github.com/spf13/cobra"
)

func newScenariosCmd(a *app) *cobra.Command {
	var show string
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "List the built-in scenarios, or print one's YAML",
		Long: `Scenarios lists the built-in scenarios with their title and the window of
logical time they cover. --show prints a scenario's YAML: a starting point
for writing your own and passing it to --scenario FILE.`,
		Example: `  leaserace scenarios
  leaserace scenarios --show renewal-race > my-race.yaml`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("show") {
				src, err := scenario.BuiltinSource(show)
				if err != nil {
					return cli.UsageErr("--show: %w", err)
				}
				if _, err := a.Stdout.Write(src); err != nil {
					return fmt.Errorf("cannot write the scenario: %w", err)
				}
				return nil
			}
			scs, err := scenario.Builtins()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tWINDOW\tTITLE")
			for _, sc := range scs {
				fmt.Fprintf(tw, "%s\t%d–%d\t%s\n", sc.Name, sc.Window.From, sc.Window.To, sc.Title)
			}
			if err := tw.Flush(); err != nil {
				return fmt.Errorf("cannot write the list: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&show, "show", "", "print this built-in scenario's YAML")
	return cmd
}
