package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/portal"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// ownerKeyAbilities are the permissions of the key create-account prints: all but
// auto-transcribe, which charges for every recorded call and so is opt-in
// (create-key --ability auto-transcribe).
func ownerKeyAbilities() auth.Abilities {
	return slices.DeleteFunc(slices.Clone(auth.AllAbilities), func(a auth.Ability) bool { return a == auth.AutoTranscribe })
}

// newAdminCommand holds operator tasks that the public API does not offer: creating accounts
// and users, issuing and revoking keys, and topping up balances.
func newAdminCommand() *cobra.Command {
	var dbURL string
	admin := &cobra.Command{Use: "admin", Short: "Operator tasks: accounts, users, API keys, balances and numbers"}
	admin.PersistentFlags().StringVar(&dbURL, "database-url", "", "PostgreSQL connection URL (default $DATABASE_URL)")
	withStore := func(cmd *cobra.Command, fn func(*store.Store) error) error {
		url := dbURL
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

	var name, plan, timeZone, ownerName, ownerEmail string
	var addons []string
	createAccount := &cobra.Command{
		Use:   "create-account",
		Short: "Create an account with its owner and print the owner's key (every permission but auto-transcribe)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
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
	f := createAccount.Flags()
	f.StringVar(&name, "name", "", "account name")
	f.StringVar(&plan, "plan", "business", "plan: starter, team or business")
	f.StringSliceVar(&addons, "addon", nil, "add-on to enable (repeatable), e.g. integrations")
	f.StringVar(&timeZone, "time-zone", "Europe/London", "IANA time zone")
	f.StringVar(&ownerName, "owner-name", "", "owner's name")
	f.StringVar(&ownerEmail, "owner-email", "", "owner's email")
	for _, req := range []string{"name", "owner-name", "owner-email"} {
		_ = createAccount.MarkFlagRequired(req)
	}

	var userID, keyName string
	var abilities []string
	createKey := &cobra.Command{
		Use:   "create-key",
		Short: "Issue an API key acting as a user and print it once",
		RunE: func(cmd *cobra.Command, _ []string) error {
			as, err := auth.ParseAbilities(abilities)
			if err != nil {
				return err
			}
			return withStore(cmd, func(st *store.Store) error {
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
	createKey.Flags().StringVar(&userID, "user", "", "public id of the user the key acts as (usr_...)")
	createKey.Flags().StringVar(&keyName, "name", "admin key", "label for the key")
	createKey.Flags().StringSliceVar(&abilities, "ability", []string{string(auth.Read)},
		"permission (repeatable): "+strings.Join(auth.Abilities(auth.AllAbilities).Strings(), ", "))
	_ = createKey.MarkFlagRequired("user")

	revokeKey := &cobra.Command{
		Use:   "revoke-key KEY_ID",
		Short: "Revoke an API key by its public id (key_...); it gets 401 from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(st *store.Store) error {
				if err := st.RevokeAPIKey(cmd.Context(), args[0], clock.RealClock{}.Now()); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
				return nil
			})
		},
	}

	var amount int64
	topUp := &cobra.Command{
		Use:   "top-up ACCOUNT_ID",
		Short: "Add prepaid credit (integer pence) to an account's balance",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if amount <= 0 {
				return fmt.Errorf("--pence must be a positive whole number of pence")
			}
			return withStore(cmd, func(st *store.Store) error {
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
	topUp.Flags().Int64Var(&amount, "pence", 0, "amount in pence")
	_ = topUp.MarkFlagRequired("pence")

	var setPlan, setStatus string
	var setAddons []string
	var integrationsOff, transcriptionOff bool
	var dailyLimit int64
	updateAccount := &cobra.Command{
		Use:   "update-account ACCOUNT_ID",
		Short: "Change an account's plan, add-ons, status, platform switches or daily spending limit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var in store.AccountSettings
			f := cmd.Flags()
			if f.Changed("plan") {
				in.Plan = &setPlan
			}
			if f.Changed("addon") || f.Changed("addons") {
				in.Addons = &setAddons
			}
			if f.Changed("status") {
				in.Status = &setStatus
			}
			if f.Changed("integrations-disabled") {
				in.IntegrationsDisabled = &integrationsOff
			}
			if f.Changed("transcription-disabled") {
				in.TranscriptionDisabled = &transcriptionOff
			}
			if f.Changed("daily-spend-limit-pence") {
				in.DailySpendLimitPence = &dailyLimit
			}
			return withStore(cmd, func(st *store.Store) error {
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
	uf := updateAccount.Flags()
	uf.StringVar(&setPlan, "plan", "", "plan: starter, team or business")
	uf.StringSliceVar(&setAddons, "addon", nil, "the account's add-ons, repeatable: the full list, e.g. integrations (--addon= removes all)")
	// --addons was this command's spelling; both account commands now take --addon, like --ability.
	uf.StringSliceVar(&setAddons, "addons", nil, "")
	_ = uf.MarkDeprecated("addons", "use --addon")
	uf.StringVar(&setStatus, "status", "", "active or paused")
	uf.BoolVar(&integrationsOff, "integrations-disabled", false, "switch Integrations off for this account on the platform side")
	uf.BoolVar(&transcriptionOff, "transcription-disabled", false, "switch transcription off for this account")
	uf.Int64Var(&dailyLimit, "daily-spend-limit-pence", 0, "daily spending limit in pence")

	var userAccount, userName, userEmail, userRole string
	var userKeys, userTranscribe bool
	createUser := &cobra.Command{
		Use:   "create-user",
		Short: "Add a user (owner or member) to an account",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				acct, err := st.GetAccountByPublicID(cmd.Context(), userAccount)
				if err != nil {
					return fmt.Errorf("account %s: %w", userAccount, err)
				}
				u, err := st.CreateUser(cmd.Context(), store.NewUser{AccountID: acct.ID, Name: userName, Email: userEmail, Role: userRole,
					CanManageAPIKeys: userKeys, CanTranscribe: userTranscribe})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s\n", u.PublicID)
				return nil
			})
		},
	}
	cf := createUser.Flags()
	cf.StringVar(&userAccount, "account", "", "public id of the account (acct_...)")
	cf.StringVar(&userName, "name", "", "the user's name")
	cf.StringVar(&userEmail, "email", "", "the user's email")
	cf.StringVar(&userRole, "role", "member", "owner or member")
	cf.BoolVar(&userKeys, "can-manage-api-keys", false, "a member allowed to create API keys")
	cf.BoolVar(&userTranscribe, "can-transcribe", false, "a member allowed to start paid transcriptions")
	for _, req := range []string{"account", "name", "email"} {
		_ = createUser.MarkFlagRequired(req)
	}

	removeUser := &cobra.Command{
		Use:   "remove-user USER_ID",
		Short: "Mark a user as gone from the account; their keys get 401 from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, func(st *store.Store) error {
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

	var linkEmail, linkAccount, linkBaseURL, linkNext string
	portalLink := &cobra.Command{
		Use:   "portal-link",
		Short: "Print a one-time sign-in link to the account portal for a user (valid 15 minutes), for operators without SMTP",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				users, err := st.UsersByEmail(cmd.Context(), linkEmail)
				if err != nil {
					return err
				}
				users = slices.DeleteFunc(users, func(u store.User) bool {
					if linkAccount == "" {
						return false
					}
					acct, err := st.GetAccount(cmd.Context(), u.AccountID)
					return err != nil || acct.PublicID != linkAccount
				})
				switch {
				case len(users) == 0:
					return fmt.Errorf("no user with email %s is on an account", linkEmail)
				case len(users) > 1:
					return fmt.Errorf("%s is a user of %d accounts: choose one with --account", linkEmail, len(users))
				}
				link, err := portal.SignInLink(cmd.Context(), st, clock.RealClock{}.Now(), portal.DefaultLinkTTL, linkBaseURL, users[0].ID, linkNext)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), link)
				return nil
			})
		},
	}
	pf := portalLink.Flags()
	pf.StringVar(&linkEmail, "email", "", "the user's email")
	pf.StringVar(&linkAccount, "account", "", "public id of the account (acct_...), when the email is on more than one")
	pf.StringVar(&linkBaseURL, "public-base-url", "http://localhost:8080", "origin the portal is reached at (serve's --public-base-url)")
	pf.StringVar(&linkNext, "next", "", "portal page to open after signing in, e.g. /portal/calls/call_...")
	_ = portalLink.MarkFlagRequired("email")

	admin.AddCommand(createAccount, updateAccount, createUser, removeUser, createKey, revokeKey, topUp, portalLink)
	admin.AddCommand(numberCommands(withStore)...)
	return admin
}
