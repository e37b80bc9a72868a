package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/simulate"
)

func newSimulateCommand() *cobra.Command {
	o := simulate.Options{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Play the telephony platform: report calls, voicemails, texts and message slips at a chosen rate",
		Long: "simulate sends realistic reports to the internal ingestion API (switchboard serve --platform-bind-address),\n" +
			"authenticated with $SWITCHBOARD_PLATFORM_TOKEN. Each stored call queues its webhook events.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Token = os.Getenv("SWITCHBOARD_PLATFORM_TOKEN")
			if o.Token == "" {
				return fmt.Errorf("set SWITCHBOARD_PLATFORM_TOKEN to the platform token the service was started with")
			}
			o.Progress = cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			totals, err := simulate.Run(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sent %d calls, %d voicemails, %d texts, %d message slips; %d failed\n",
				totals.Calls, totals.Voicemails, totals.Texts, totals.Slips, totals.Failures)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.PlatformURL, "platform-url", "http://"+ingest.DefaultAddr, "the ingestion API")
	f.Float64Var(&o.Rate, "rate", 1, "reports per second")
	f.IntVar(&o.Count, "count", 0, "stop after this many reports (0: until Ctrl-C)")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed, for repeatable traffic")
	return cmd
}
