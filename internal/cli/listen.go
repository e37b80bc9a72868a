package cli

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/switchboard-dev/switchboard/internal/listen"
)

// apiFlags are the flags of the commands that act through the public API.
type apiFlags struct{ base, key string }

func (a *apiFlags) add(f *pflag.FlagSet) {
	f.StringVar(&a.base, "api-base", os.Getenv("SWITCHBOARD_API_BASE"), "the API's address, e.g. https://api.switchboard.example/v1 (default $SWITCHBOARD_API_BASE)")
	// No default from the environment here: cobra prints defaults in --help.
	f.StringVar(&a.key, "key", "", "API key (default $SWITCHBOARD_API_KEY); never printed")
}

func (a *apiFlags) apiKey() string {
	if a.key != "" {
		return a.key
	}
	return os.Getenv("SWITCHBOARD_API_KEY")
}

func newListenCommand() *cobra.Command {
	var (
		api  apiFlags
		opts listen.Options
	)
	cmd := &cobra.Command{
		Use:   "listen --forward-to URL",
		Short: "Forward the account's webhook events to a local receiver, signed as real deliveries",
		Long: "Subscribes to the account's live channel and posts each webhook event to --forward-to with the body and " +
			"headers of a real delivery (X-Service-* and Standard Webhooks signatures), signed with the secret printed " +
			"at start: the same for this key on this machine. Prints one line per event. Needs a key that may manage " +
			"webhooks and an account with Integrations.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.APIBase, opts.Key, opts.Out = api.base, api.apiKey(), cmd.OutOrStdout()
			return listen.Listen(cmd.Context(), opts)
		},
	}
	api.add(cmd.Flags())
	cmd.Flags().StringVar(&opts.ForwardTo, "forward-to", "", "the local receiver's URL, e.g. http://localhost:3000/hooks")
	cmd.Flags().StringSliceVar(&opts.Events, "events", nil, "events to forward, comma-separated (default all: call.ended, voicemail.received, transcript.ready)")
	cmd.Flags().StringVar(&opts.ConfigDir, "config-dir", "", "where the machine's salt for the signing secret is kept (default <user config dir>/switchboard)")
	return cmd
}

func newTriggerCommand() *cobra.Command {
	var (
		api  apiFlags
		opts listen.TriggerOptions
	)
	cmd := &cobra.Command{
		Use:   "trigger test --endpoint ID",
		Short: "Send the test event to a webhook endpoint through the API (POST /v1/webhooks/{endpoint}/test)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.APIBase, opts.Key, opts.Event, opts.Out = api.base, api.apiKey(), args[0], cmd.OutOrStdout()
			return listen.Trigger(cmd.Context(), opts)
		},
	}
	api.add(cmd.Flags())
	cmd.Flags().StringVar(&opts.Endpoint, "endpoint", "", "the endpoint's public id (GET /v1/webhooks)")
	return cmd
}
