package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/spf13/cobra"
)

// releaseVersion is this source tree's version; a build from a tagged
// module reports the module's version instead.
const releaseVersion = "0.1.0-dev"

func version() string {
	v := releaseVersion
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return v
}

// versionLine is what both `leaserace version` and --version print.
func versionLine() string {
	return fmt.Sprintf("leaserace %s (%s, %s/%s)", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print leaserace's version",
		Example: "  leaserace version\n  leaserace --version",
		Args:    cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(a.Stdout, versionLine())
			return err
		},
	}
}
