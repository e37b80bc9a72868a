// Package store is the PostgreSQL data layer shared by the API facade and the controllers.
//
// Its methods are grouped by domain into small interfaces (domains.go): Accounts, Users,
// Keys, SignIn, RateLimits, Idempotency, Calls, BulkCalls, Recordings, Contacts, Inbox,
// Messages, Billing, Numbers, Transcriptions, Outbox, Deferred, DeliveryHistory,
// WebhookEndpoints, DeliveryMembers, Realtime, Retention, Transactions and Health. *Store
// implements them all and every method belongs to exactly one
// (TestEveryMethodHasOneDomain). A consumer holds only the
// interfaces it uses (a field per interface, or a small interface of its own embedding
// them), so its dependencies are visible in its type and a test can see what it touches;
// only the wiring (internal/serve, the CLI's commands, hack/localdev) and the test support
// open a *Store and hand it over. Work that must commit together still runs in one Tx
// (Transactions.InTx), whatever domains it spans.
package store
