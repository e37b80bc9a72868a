package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
)

func newSeedCommand() *cobra.Command {
	var dbURL, recordingsDir string
	var calls int
	var demoAccount bool
	cmd := &cobra.Command{
		Use:   "seed --demo",
		Short: "Create a demo account with 90 days of history and print its API keys",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !demoAccount {
				return fmt.Errorf("say what to seed: --demo")
			}
			ctx := cmd.Context()
			if _, err := store.Migrate(ctx, dbURL); err != nil {
				return err
			}
			st, err := store.Open(ctx, dbURL)
			if err != nil {
				return err
			}
			defer st.Close()
			opts := seed.DemoOptions{Progress: cmd.ErrOrStderr(), Calls: calls}
			if recordingsDir != "" {
				rs, err := recordingstore.NewLocal(recordingsDir)
				if err != nil {
					return err
				}
				defer rs.Close()
				opts.Recordings = rs
			}
			demo, err := seed.Demo(ctx, st, opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "account %s\nowner key %s\nread-only member key %s\n", demo.AccountPublicID, demo.OwnerKey, demo.MemberKey)
			return nil
		},
	}
	databaseURLFlag(cmd, &dbURL)
	cmd.Flags().StringVar(&recordingsDir, "recordings-dir", "", "local recording store to put the demo audio in (default: no audio)")
	cmd.Flags().BoolVar(&demoAccount, "demo", false, "create the demo account (Acme Plumbing Ltd)")
	cmd.Flags().IntVar(&calls, "calls", seed.DefaultDemoCalls, "how many calls of history to create")
	return cmd
}
