package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/numbers"
	"github.com/switchboard-dev/switchboard/internal/portal"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// ownerKeyAbilities are the permissions of the key create-account prints: all but
// auto-transcribe, which charges for every recorded call and so is opt-in
// (create-key --ability auto-transcribe).
func ownerKeyAbilities() auth.Abilities {
	return slices.DeleteFunc(slices.Clone(auth.AllAbilities), func(a auth.Ability) bool { return a == auth.AutoTranscribe })
}

// adminStore is what the admin commands read and change: accounts, users, keys, balances,
// sign-in links, and numbers through the numbers service.
type adminStore interface {
	numbers.Store
	store.Users
	store.Keys
	store.Billing
	store.SignIn
}

// storeRunner opens the database for one admin command and closes it when fn returns.
type storeRunner func(cmd *cobra.Command, fn func(adminStore) error) error

// newAdminCommand holds operator tasks that the public API does not offer: creating accounts
// and users, issuing and revoking keys, and topping up balances.
func newAdminCommand() *cobra.Command {
	var dbURL string
	admin := &cobra.Command{Use: "admin", Short: "Operator tasks: accounts, users, API keys, balances and numbers"}
	admin.PersistentFlags().StringVar(&dbURL, "database-url", "", "PostgreSQL connection URL (default $DATABASE_URL)")
	// The flag is read when a subcommand runs, after parsing, hence the pointer.
	withStore := openAdminStore(&dbURL)
	admin.AddCommand(
		newCreateAccountCommand(withStore),
		newUpdateAccountCommand(withStore),
		newCreateUserCommand(withStore),
		newRemoveUserCommand(withStore),
		newCreateKeyCommand(withStore),
		newRevokeKeyCommand(withStore),
		newTopUpCommand(withStore),
		newPortalLinkCommand(withStore),
	)
	admin.AddCommand(numberCommands(withStore)...)
	return admin
}

// openAdminStore opens the store at *dbURL, or at $DATABASE_URL when the flag is empty.
func openAdminStore(dbURL *string) storeRunner {
	return func(cmd *cobra.Command, fn func(adminStore) error) error {
		url := *dbURL
		if url == "" {
			url = envDatabaseURL()
		}
		st, err := store.Open(cmd.Context(), url)
		if err != nil {
			return err
		}
		defer st.Close()
		return fn(st)
	}
}

func newCreateAccountCommand(withStore storeRunner) *cobra.Command {
	var name, plan, timeZone, ownerName, ownerEmail string
	var addons []string
	cmd := &cobra.Command{
		Use:   "create-account",
		Short: "Create an account with its owner and print the owner's key (every permission but auto-transcribe)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st adminStore) error {
				acct, err := st.CreateAccount(cmd.Context(), store.NewAccount{Name: name, Plan: plan, Addons: addons, TimeZone: timeZone})
				if err != nil {
					return err
				}
				owner, err := st.CreateUser(cmd.Context(), store.NewUser{AccountID: acct.ID, Name: ownerName, Email: ownerEmail,
					Role: "owner", CanManageAPIKeys: true, CanTranscribe: true})
				if err != nil {
					return err
				}
				key, err := st.CreateAPIKey(cmd.Context(), owner.ID, "owner key", ownerKeyAbilities())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "account %s\nowner %s\nkey %s (shown once)\npermissions %s\n", acct.PublicID, owner.PublicID,
					key.Token, strings.Join(key.Abilities.Strings(), ", "))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "account name")
	f.StringVar(&plan, "plan", "business", "plan: starter, team or business")
	f.StringSliceVar(&addons, "addon", nil, "add-on to enable (repeatable), e.g. integrations")
	f.StringVar(&timeZone, "time-zone", "Europe/London", "IANA time zone")
	f.StringVar(&ownerName, "owner-name", "", "owner's name")
	f.StringVar(&ownerEmail, "owner-email", "", "owner's email")
	for _, req := range []string{"name", "owner-name", "owner-email"} {
		_ = cmd.MarkFlagRequired(req)
	}
	return cmd
}

func newCreateKeyCommand(withStore storeRunner) *cobra.Command {
	var userID, keyName string
	var abilities []string
	cmd := &cobra.Command{
		Use:   "create-key",
		Short: "Issue an API key acting as a user and print it once",
		RunE: func(cmd *cobra.Command, _ []string) error {
			as, err := auth.ParseAbilities(abilities)
			if err != nil {
				return err
			}
			return withStore(cmd, func(st adminStore) error {
				u, err := st.GetUserByPublicID(cmd.Context(), userID)
				if err != nil {
					return fmt.Errorf("user %s: %w", userID, err)
				}
				key, err := st.CreateAPIKey(cmd.Context(), u.ID, keyName, as)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "key %s %s (shown once)\n", key.PublicID, key.Token)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&userID, "user", "", "public id of the user the key acts as (usr_...)")
	cmd.Flags().StringVar(&keyName, "name", "admin key", "label for the key")
	cmd.Flags().StringSliceVar(&abilities, "ability", []string{string(auth.Read)},
		"permission (repeatable): "+strings.Join(auth.Abilities(auth.AllAbilities).Strings(), ", "))
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

func newRevokeKeyCommand(withStore storeRunner) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke-key KEY_ID",
		Short: "Revoke an API key by its public id (key_...); it gets 401 from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(st adminStore) error {
				if err := st.RevokeAPIKey(cmd.Context(), args[0], clock.RealClock{}.Now()); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
				return nil
			})
		},
	}
}

func newTopUpCommand(withStore storeRunner) *cobra.Command {
	var amount int64
	cmd := &cobra.Command{
		Use:   "top-up ACCOUNT_ID",
		Short: "Add prepaid credit (integer pence) to an account's balance",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if amount <= 0 {
				return fmt.Errorf("--pence must be a positive whole number of pence")
			}
			return withStore(cmd, func(st adminStore) error {
				acct, err := st.GetAccountByPublicID(cmd.Context(), args[0])
				if err != nil {
					return fmt.Errorf("account %s: %w", args[0], err)
				}
				balance, err := st.TopUp(cmd.Context(), acct.ID, amount, clock.RealClock{}.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "balance of %s is now %d pence\n", acct.PublicID, balance)
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&amount, "pence", 0, "amount in pence")
	_ = cmd.MarkFlagRequired("pence")
	return cmd
}

// accountFlags are update-account's flags; only those given change the account.
type accountFlags struct {
	plan, status                      string
	addons                            []string
	integrationsOff, transcriptionOff bool
	dailyLimit                        int64
}

func newUpdateAccountCommand(withStore storeRunner) *cobra.Command {
	var a accountFlags
	cmd := &cobra.Command{
		Use:   "update-account ACCOUNT_ID",
		Short: "Change an account's plan, add-ons, status, platform switches or daily spending limit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := a.settings(cmd)
			return withStore(cmd, func(st adminStore) error {
				acct, err := st.GetAccountByPublicID(cmd.Context(), args[0])
				if err != nil {
					return fmt.Errorf("account %s: %w", args[0], err)
				}
				acct, err = st.UpdateAccount(cmd.Context(), acct.ID, in)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "account %s: plan %s, add-ons %v, status %s, integrations disabled %t, transcription disabled %t, daily limit %d pence\n",
					acct.PublicID, acct.Plan, acct.Addons, acct.Status, acct.IntegrationsDisabled, acct.TranscriptionDisabled, acct.DailySpendLimitPence)
				return nil
			})
		},
	}
	uf := cmd.Flags()
	uf.StringVar(&a.plan, "plan", "", "plan: starter, team or business")
	uf.StringSliceVar(&a.addons, "addon", nil, "the account's add-ons, repeatable: the full list, e.g. integrations (--addon= removes all)")
	// --addons was this command's spelling; both account commands now take --addon, like --ability.
	uf.StringSliceVar(&a.addons, "addons", nil, "")
	_ = uf.MarkDeprecated("addons", "use --addon")
	uf.StringVar(&a.status, "status", "", "active or paused")
	uf.BoolVar(&a.integrationsOff, "integrations-disabled", false, "switch Integrations off for this account on the platform side")
	uf.BoolVar(&a.transcriptionOff, "transcription-disabled", false, "switch transcription off for this account")
	uf.Int64Var(&a.dailyLimit, "daily-spend-limit-pence", 0, "daily spending limit in pence")
	return cmd
}

// settings returns the settings whose flags were given.
func (a *accountFlags) settings(cmd *cobra.Command) store.AccountSettings {
	var in store.AccountSettings
	f := cmd.Flags()
	if f.Changed("plan") {
		in.Plan = &a.plan
	}
	if f.Changed("addon") || f.Changed("addons") {
		in.Addons = &a.addons
	}
	if f.Changed("status") {
		in.Status = &a.status
	}
	if f.Changed("integrations-disabled") {
		in.IntegrationsDisabled = &a.integrationsOff
	}
	if f.Changed("transcription-disabled") {
		in.TranscriptionDisabled = &a.transcriptionOff
	}
	if f.Changed("daily-spend-limit-pence") {
		in.DailySpendLimitPence = &a.dailyLimit
	}
	return in
}

func newCreateUserCommand(withStore storeRunner) *cobra.Command {
	var account, name, email, role string
	var manageKeys, transcribe bool
	cmd := &cobra.Command{
		Use:   "create-user",
		Short: "Add a user (owner or member) to an account",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st adminStore) error {
				acct, err := st.GetAccountByPublicID(cmd.Context(), account)
				if err != nil {
					return fmt.Errorf("account %s: %w", account, err)
				}
				u, err := st.CreateUser(cmd.Context(), store.NewUser{AccountID: acct.ID, Name: name, Email: email, Role: role,
					CanManageAPIKeys: manageKeys, CanTranscribe: transcribe})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s\n", u.PublicID)
				return nil
			})
		},
	}
	cf := cmd.Flags()
	cf.StringVar(&account, "account", "", "public id of the account (acct_...)")
	cf.StringVar(&name, "name", "", "the user's name")
	cf.StringVar(&email, "email", "", "the user's email")
	cf.StringVar(&role, "role", "member", "owner or member")
	cf.BoolVar(&manageKeys, "can-manage-api-keys", false, "a member allowed to create API keys")
	cf.BoolVar(&transcribe, "can-transcribe", false, "a member allowed to start paid transcriptions")
	for _, req := range []string{"account", "name", "email"} {
		_ = cmd.MarkFlagRequired(req)
	}
	return cmd
}

func newRemoveUserCommand(withStore storeRunner) *cobra.Command {
	return &cobra.Command{
		Use:   "remove-user USER_ID",
		Short: "Mark a user as gone from the account; their keys get 401 from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(st adminStore) error {
				u, err := st.GetUserByPublicID(cmd.Context(), args[0])
				if err != nil {
					return fmt.Errorf("user %s: %w", args[0], err)
				}
				if err := st.MarkUserLeft(cmd.Context(), u.ID, clock.RealClock{}.Now()); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s has left; their keys no longer work\n", u.PublicID)
				return nil
			})
		},
	}
}

func newPortalLinkCommand(withStore storeRunner) *cobra.Command {
	var email, account, baseURL, next string
	cmd := &cobra.Command{
		Use:   "portal-link",
		Short: "Print a one-time sign-in link to the account portal for a user (valid 15 minutes), for operators without SMTP",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st adminStore) error {
				user, err := portalLinkUser(cmd, st, email, account)
				if err != nil {
					return err
				}
				link, err := portal.SignInLink(cmd.Context(), st, clock.RealClock{}.Now(), portal.DefaultLinkTTL, baseURL, user.ID, next)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), link)
				return nil
			})
		},
	}
	pf := cmd.Flags()
	pf.StringVar(&email, "email", "", "the user's email")
	pf.StringVar(&account, "account", "", "public id of the account (acct_...), when the email is on more than one")
	pf.StringVar(&baseURL, "public-base-url", "http://localhost:8080", "origin the portal is reached at (serve's --public-base-url)")
	pf.StringVar(&next, "next", "", "portal page to open after signing in, e.g. /portal/calls/call_...")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}

// portalLinkUser is the one user with this email, on the given account when account is set.
func portalLinkUser(cmd *cobra.Command, st adminStore, email, account string) (store.User, error) {
	users, err := st.UsersByEmail(cmd.Context(), email)
	if err != nil {
		return store.User{}, err
	}
	users = slices.DeleteFunc(users, func(u store.User) bool {
		if account == "" {
			return false
		}
		acct, err := st.GetAccount(cmd.Context(), u.AccountID)
		return err != nil || acct.PublicID != account
	})
	switch {
	case len(users) == 0:
		return store.User{}, fmt.Errorf("no user with email %s is on an account", email)
	case len(users) > 1:
		return store.User{}, fmt.Errorf("%s is a user of %d accounts: choose one with --account", email, len(users))
	}
	return users[0], nil
}
