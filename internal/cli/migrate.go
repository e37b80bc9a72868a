package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboard-dev/switchboard/internal/store"
)

func newMigrateCommand() *cobra.Command {
	var dbURL string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the embedded database migrations",
		RunE: func(cmd *cobra.Command, _ []string) error {
			applied, err := store.Migrate(cmd.Context(), dbURL)
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "database is up to date")
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "applied migrations %v\n", applied)
			return nil
		},
	}
	databaseURLFlag(cmd, &dbURL)
	return cmd
}
