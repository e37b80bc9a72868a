package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/numbers"
)

// settingsFlags binds the number settings as flags; only the flags given change a number.
type settingsFlags struct {
	label, businessProfile, forwardCLIMode, platformE164            string
	smsCapable, smsReady, cliEligible, cliVerified, defaultCallerID bool
	voicemailTranscription, callTranscription, privacyMode          bool
}

func (s *settingsFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&s.label, "label", "", "the number's label")
	f.StringVar(&s.businessProfile, "business-profile", "", "business profile name (created when new; empty for none)")
	f.StringVar(&s.forwardCLIMode, "forward-cli-mode", "", "caller ID forwarded calls show: caller, own or platform")
	f.StringVar(&s.platformE164, "platform-e164", "", "the platform number shown when --forward-cli-mode=platform")
	f.BoolVar(&s.smsCapable, "sms-capable", false, "the number can send and receive texts")
	f.BoolVar(&s.smsReady, "sms-ready", false, "texting is set up (needs --sms-capable)")
	f.BoolVar(&s.cliEligible, "cli-eligible", false, "the number may be shown as caller ID")
	f.BoolVar(&s.cliVerified, "cli-verified", false, "the number is verified as caller ID")
	f.BoolVar(&s.defaultCallerID, "default-caller-id", false, "the account's default caller ID")
	f.BoolVar(&s.voicemailTranscription, "voicemail-transcription", true, "transcribe voicemails")
	f.BoolVar(&s.callTranscription, "call-transcription", false, "transcribe recorded calls")
	f.BoolVar(&s.privacyMode, "privacy-mode", false, "privacy mode: calls are never transcribed")
}

// settings returns the settings whose flags were given.
func (s *settingsFlags) settings(f *pflag.FlagSet) numbers.Settings {
	var out numbers.Settings
	str := func(name string, v string) *string {
		if f.Changed(name) {
			return &v
		}
		return nil
	}
	flag := func(name string, v bool) *bool {
		if f.Changed(name) {
			return &v
		}
		return nil
	}
	out.Label, out.BusinessProfile = str("label", s.label), str("business-profile", s.businessProfile)
	out.ForwardCLIMode, out.PlatformE164 = str("forward-cli-mode", s.forwardCLIMode), str("platform-e164", s.platformE164)
	out.SMSCapable, out.SMSReady = flag("sms-capable", s.smsCapable), flag("sms-ready", s.smsReady)
	out.CLIEligible, out.CLIVerified = flag("cli-eligible", s.cliEligible), flag("cli-verified", s.cliVerified)
	out.IsDefaultCallerID = flag("default-caller-id", s.defaultCallerID)
	out.VoicemailTranscriptionEnabled = flag("voicemail-transcription", s.voicemailTranscription)
	out.CallTranscriptionEnabled = flag("call-transcription", s.callTranscription)
	out.PrivacyModeEnabled = flag("privacy-mode", s.privacyMode)
	return out
}

// printJSON prints what the numbers service answered, as the platform ingestion API does.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseTimeFlag reads an RFC 3339 flag; empty is nil.
func parseTimeFlag(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, fmt.Errorf("--%s must be an RFC 3339 time such as 2026-12-01T09:00:00Z: %w", name, err)
	}
	return &t, nil
}

// numberCommands are the operator's number commands; they call internal/numbers, the same
// code as the platform's ingestion routes, and print the number (or routing) as JSON.
func numberCommands(withStore storeRunner) []*cobra.Command {
	service := func(st numbers.Store) *numbers.Service { return numbers.New(st, clock.RealClock{}) }

	var account, number string
	var portingIn bool
	var addSettings settingsFlags
	add := &cobra.Command{
		Use:   "add-number",
		Short: "Give an account a phone number (repeating it changes nothing); prints the number",
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := numbers.Provision{Account: account, Number: number, PortingIn: portingIn, Settings: addSettings.settings(cmd.Flags())}
			return withStore(cmd, func(st adminStore) error {
				n, err := service(st).Provision(cmd.Context(), in)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), numbers.Show(n))
			})
		},
	}
	add.Flags().StringVar(&account, "account", "", "public id of the account (acct_...)")
	add.Flags().StringVar(&number, "number", "", "the phone number, international or UK national form")
	add.Flags().BoolVar(&portingIn, "porting-in", false, "the number is still being ported in (status porting)")
	addSettings.bind(add.Flags())
	for _, req := range []string{"account", "number"} {
		_ = add.MarkFlagRequired(req)
	}

	var updateSettings settingsFlags
	update := &cobra.Command{
		Use:   "update-number NUMBER",
		Short: "Change a number's settings; only the flags given change",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := updateSettings.settings(cmd.Flags())
			return withStore(cmd, func(st adminStore) error {
				n, err := service(st).Update(cmd.Context(), args[0], in)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), numbers.Show(n))
			})
		},
	}
	updateSettings.bind(update.Flags())

	show := &cobra.Command{
		Use:   "show-number NUMBER",
		Short: "Print a number with its account, status and settings",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(st adminStore) error {
				n, err := service(st).Number(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), numbers.Show(n))
			})
		},
	}

	var direction, step, portAt string
	port := &cobra.Command{
		Use:   "port-number NUMBER",
		Short: "Record a porting step: --direction in (completed, cancelled) or out (started, completed, cancelled)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := parseTimeFlag("release-at", portAt)
			if err != nil {
				return err
			}
			return withStore(cmd, func(st adminStore) error {
				n, err := service(st).Port(cmd.Context(), args[0], direction, step, at)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), numbers.Show(n))
			})
		},
	}
	port.Flags().StringVar(&direction, "direction", "", "in or out")
	port.Flags().StringVar(&step, "step", "", "started (out only), completed or cancelled")
	port.Flags().StringVar(&portAt, "release-at", "", "port date of a port out (RFC 3339)")
	for _, req := range []string{"direction", "step"} {
		_ = port.MarkFlagRequired(req)
	}

	var releaseAt string
	release := &cobra.Command{
		Use:   "release-number NUMBER",
		Short: "Release a number now, or at --release-at (status releasing until then)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := parseTimeFlag("release-at", releaseAt)
			if err != nil {
				return err
			}
			return withStore(cmd, func(st adminStore) error {
				n, err := service(st).Release(cmd.Context(), args[0], at)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), numbers.Show(n))
			})
		},
	}
	release.Flags().StringVar(&releaseAt, "release-at", "", "when the release takes effect (RFC 3339); default now")

	var routingFile string
	setRouting := &cobra.Command{
		Use:   "set-routing NUMBER --file ROUTING.json",
		Short: "Replace a number's routing with the JSON in --file (- for stdin), the body of the platform's PUT .../routing",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rd := cmd.InOrStdin()
			if routingFile != "-" {
				f, err := os.Open(routingFile)
				if err != nil {
					return err
				}
				defer f.Close()
				rd = f
			}
			var in numbers.Routing
			dec := json.NewDecoder(rd)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return fmt.Errorf("read the routing from %s: %w", routingFile, err)
			}
			return withStore(cmd, func(st adminStore) error {
				r, err := service(st).SetRouting(cmd.Context(), args[0], in)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), r)
			})
		},
	}
	setRouting.Flags().StringVar(&routingFile, "file", "", "JSON file with default, schedules and override (- for stdin)")
	_ = setRouting.MarkFlagRequired("file")

	return []*cobra.Command{add, update, show, port, release, setRouting}
}
