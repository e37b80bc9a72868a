// Package store is the PostgreSQL data layer shared by the API facade and the controllers.
//
// Its methods are grouped by domain into small interfaces (domains.go): Accounts, Users, Keys,
// SignIn, RateLimits, Idempotency, Calls, BulkCalls, Recordings, Contacts, Inbox, Messages,
// Billing, Numbers, Transcriptions, Outbox, Deferred, DeliveryHistory, WebhookEndpoints,
// DeliveryMembers, Realtime, Retention, Transactions and Health. *Store implements them all,
// and every method but Close belongs to exactly one (TestEveryMethodHasOneDomain). A consumer
// holds only the interfaces it uses, as a field or in a small interface of its own that embeds
// them; only the wiring (internal/serve, hack/localdev) names *Store (test/layout's
// TestOnlyTheWiringNamesTheStore). Work that must commit together still runs in one Tx
// (Transactions.InTx), whatever domains it spans.
package store
