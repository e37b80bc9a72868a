// Package cli holds the switchboard subcommands.
package cli

import (
	"os"

	"github.com/spf13/cobra"
)

// Version is the release this binary was built from, set at link time
// (-ldflags -X; make image and the Dockerfile set it); `switchboard --version` prints it.
var Version = "dev"

// NewRootCommand builds the switchboard command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "switchboard",
		Version:       Version,
		Short:         "Switchboard call-handling service: API facade, controllers and operator tools",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(newServeCommand(), newMigrateCommand(), newAdminCommand(), newSeedCommand(), newSimulateCommand(),
		newListenCommand(), newTriggerCommand())
	return root
}

// databaseURLFlag binds --database-url with DATABASE_URL as its default.
func databaseURLFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL connection URL (default $DATABASE_URL)")
}

func envDatabaseURL() string { return os.Getenv("DATABASE_URL") }
