package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// newAdminCommand holds operator tasks that the public API does not offer: creating accounts
// and users, issuing and revoking keys, and topping up balances.
func newAdminCommand() *cobra.Command {
	var dbURL string
	admin := &cobra.Command{Use: "admin", Short: "Operator tasks: accounts, users, API keys and balances"}
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
		Short: "Create an account with its owner and print the owner's all-permission key",
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
				key, err := st.CreateAPIKey(cmd.Context(), owner.ID, "owner key", auth.Abilities(auth.AllAbilities))
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "account %s\nowner %s\nkey %s (shown once)\n", acct.PublicID, owner.PublicID, key.Token)
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

	admin.AddCommand(createAccount, createKey, revokeKey, topUp)
	return admin
}
