package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// Accounts is the accounts: their plans, settings and public ids.
type Accounts interface {
	CreateAccount(ctx context.Context, in NewAccount) (Account, error)
	GetAccount(ctx context.Context, id int64) (Account, error)
	GetAccountByPublicID(ctx context.Context, publicID string) (Account, error)
	UpdateAccount(ctx context.Context, id int64, in AccountSettings) (Account, error)
	MissingAccounts(ctx context.Context, publicIDs []string) ([]string, error)
}

// Users is the people of an account: who they are, their allowances, leaving.
type Users interface {
	CreateUser(ctx context.Context, in NewUser) (User, error)
	GetUser(ctx context.Context, id int64) (User, error)
	GetUserByPublicID(ctx context.Context, publicID string) (User, error)
	UsersByEmail(ctx context.Context, email string) ([]User, error)
	AccountOwners(ctx context.Context, accountID int64) ([]User, error)
	AccountUsers(ctx context.Context, accountID int64) ([]User, error)
	SetUserAllowances(ctx context.Context, actor User, userPublicID string, manageKeys, transcribe bool) (User, error)
	RemoveAccountUser(ctx context.Context, actor User, userPublicID string, at time.Time) error
	MarkUserLeft(ctx context.Context, userID int64, at time.Time) error
}

// Keys is API keys: issuing, listing, revoking, and authenticating a request by one.
type Keys interface {
	CreateAPIKey(ctx context.Context, userID int64, name string, abilities auth.Abilities) (APIKey, error)
	RevokeAPIKey(ctx context.Context, keyPublicID string, at time.Time) error
	AccountAPIKeys(ctx context.Context, accountID, ownUserID int64) ([]KeyListing, error)
	RevokeAccountAPIKey(ctx context.Context, actor User, keyPublicID string, at time.Time) error
	AuthenticateAndCount(ctx context.Context, digest []byte, windowStart time.Time) (Principal, int, error)
}

// SignIn is the portal's one-time sign-in links and sessions.
type SignIn interface {
	NewSignInLink(ctx context.Context, userID int64, now, expires time.Time) (string, error)
	CheckSignInLink(ctx context.Context, secret string, now time.Time) (SignInLinkState, error)
	UseSignInLink(ctx context.Context, secret string, now time.Time) (User, SignInLinkState, error)
	PortalSessions() scs.Store
	PrunePortal(ctx context.Context, now, cutoff time.Time) error
}

// RateLimits is the per-minute request windows shared by the replicas.
type RateLimits interface {
	HitRateLimit(ctx context.Context, subject string, windowStart time.Time) (int, error)
	PruneRateLimits(ctx context.Context, cutoff time.Time) (int64, error)
}

// Idempotency is the Idempotency-Key claims and their saved responses.
type Idempotency interface {
	ClaimIdempotencyKey(ctx context.Context, req IdempotencyRequest, now time.Time, lease, keep time.Duration) (ClaimResult, error)
	CompleteIdempotencyKey(ctx context.Context, c *IdempotencyClaim, r SavedResponse) error
	ReleaseIdempotencyKey(ctx context.Context, c *IdempotencyClaim) error
}

// Calls is the call log: lists, one call, analytics, the platform's call reports, and the
// folding of the counts those reports leave as deltas.
type Calls interface {
	ListCalls(ctx context.Context, accountID int64, f CallFilter) ([]Call, int, error)
	GetCall(ctx context.Context, accountID int64, publicID string) (Call, error)
	GetCallAnswer(ctx context.Context, accountID int64, publicID string) (CallAnswer, error)
	CallAnalytics(ctx context.Context, q AnalyticsQuery) (Analytics, error)
	CreateCall(ctx context.Context, in NewCall) (int64, string, error)
	CreateCompletedTranscript(ctx context.Context, in NewTranscript) (int64, error)
	ReportCallProgress(ctx context.Context, in CallProgressReport) (callPublicID string, duplicate bool, err error)
	BeginCallReports(ctx context.Context, keys []CallReportKey) (*CallReports, error)
	CallsByWeekHour(ctx context.Context, accountID int64, days int, loc *time.Location, now time.Time) ([7][24]int, error)
	FoldCallCounts(ctx context.Context, max int) (int, error)
	PendingCallCounts(ctx context.Context) (int64, error)
}

// BulkCalls writes many calls at once, for seeding large accounts.
type BulkCalls interface {
	CopyCalls(ctx context.Context, calls []BulkCall) error
	AddBulkTranscripts(ctx context.Context, accountID int64, every int, sentiments, urgencies []string) error
	AnalyzeCallTables(ctx context.Context) error
}

// Recordings is call recordings, their transcripts and the signed voicemail pages.
type Recordings interface {
	GetRecording(ctx context.Context, accountID int64, publicID string) (Recording, error)
	GetRecordingForLink(ctx context.Context, publicID string) (Recording, error)
	CreateRecording(ctx context.Context, in NewRecording) (Recording, error)
	GetTranscript(ctx context.Context, accountID, recordingID int64) (Transcript, error)
	GetVoicemailPage(ctx context.Context, recordingPublicID string) (VoicemailPage, error)
}

// Contacts is the account's contact directory.
type Contacts interface {
	ListContacts(ctx context.Context, accountID int64, f ContactFilter, limit, offset int) ([]Contact, int, error)
	UpsertContact(ctx context.Context, accountID int64, in ContactInput, now time.Time, claim *IdempotencyClaim) (Contact, error)
	ReplaceContact(ctx context.Context, accountID int64, publicID string, in ContactInput, now time.Time) (Contact, error)
	DeleteContact(ctx context.Context, accountID int64, publicID string) error
	BulkUpsertContacts(ctx context.Context, accountID int64, ins []ContactInput, now time.Time, claim *IdempotencyClaim) (BulkContactsResult, error)
	GetContact(ctx context.Context, accountID int64, publicID string) (Contact, error)
}

// Inbox is what awaits the account's people: to-dos, notifications, message slips, job
// requests and blocked callers.
type Inbox interface {
	ListTasks(ctx context.Context, accountID int64, status string, limit, offset int) ([]Task, int, error)
	GetTask(ctx context.Context, accountID int64, publicID string) (Task, error)
	SetTaskStatus(ctx context.Context, accountID int64, publicID, status string, userID int64, at time.Time) (Task, error)
	CreateTask(ctx context.Context, in NewTask) (Task, error)
	ListNotifications(ctx context.Context, accountID, userID int64, unreadOnly bool, limit, offset int) (list []Notification, total, unread int, err error)
	UnreadNotifications(ctx context.Context, accountID, userID int64) (int, error)
	MarkNotificationRead(ctx context.Context, accountID, userID int64, id string, at time.Time, claim *IdempotencyClaim) (string, int, error)
	MarkAllNotificationsRead(ctx context.Context, accountID, userID int64, at time.Time, claim *IdempotencyClaim) (int, error)
	CreateNotification(ctx context.Context, in NewNotification) (Notification, error)
	ListMessageSlips(ctx context.Context, accountID int64, f SlipFilter, limit, offset int) ([]MessageSlip, int, error)
	CreateMessageSlip(ctx context.Context, in NewMessageSlip) (MessageSlip, error)
	ListJobRequests(ctx context.Context, accountID int64, statuses []string, limit, offset int) ([]JobRequest, int, error)
	CreateJobRequest(ctx context.Context, in NewJobRequest) (JobRequest, error)
	ListBlockedCallers(ctx context.Context, accountID int64, loc *time.Location) ([]BlockedCaller, error)
	CreateBlockedCaller(ctx context.Context, in NewBlockedCaller) (string, error)
	BlockCaller(ctx context.Context, actor User, e164, action, label, numberPublicID string, at time.Time) (string, error)
	UnblockCaller(ctx context.Context, actor User, publicID string) error
}

// Messages is the text (SMS) threads.
type Messages interface {
	ListSMSConversations(ctx context.Context, accountID int64, limit, offset int) ([]SMSConversation, int, error)
	GetSMSConversation(ctx context.Context, accountID int64, publicID string) (SMSConversation, error)
	ListSMSMessages(ctx context.Context, conv SMSConversation, limit, offset int) ([]SMSMessage, int, error)
	AddSMSMessage(ctx context.Context, in NewSMSMessage) (SMSMessage, error)
}

// Billing is the prepaid balance: top-ups, the ledger and receipts.
type Billing interface {
	TopUp(ctx context.Context, accountID, amountPence int64, at time.Time) (int64, error)
	ListLedgerEntries(ctx context.Context, accountID int64, limit, offset int) ([]LedgerEntry, int, error)
	ListReceipts(ctx context.Context, accountID int64, limit int) ([]Receipt, error)
}

// Numbers is the account's phone numbers and their routing.
type Numbers interface {
	ListNumbers(ctx context.Context, accountID int64) ([]NumberRow, error)
	GetNumber(ctx context.Context, accountID int64, publicID string) (NumberDetail, error)
	GetRouting(ctx context.Context, accountID int64, publicID string, now time.Time) (NumberRouting, error)
	CreateNumber(ctx context.Context, in NewNumber) (NumberRow, error)
	ListLiveNumbers(ctx context.Context) ([]string, error)
}

// Transcriptions is paid transcription: charges, a job's work, its results and refunds, and
// the notifications to the account's owners.
type Transcriptions interface {
	StartTranscription(ctx context.Context, req TranscribeRequest) (TranscribeResult, error)
	GetTranscriptionPriceInputs(ctx context.Context, accountID, recordingID int64, month, day time.Time) (TranscriptionPriceInputs, error)
	GetTranscriptionCharge(ctx context.Context, publicID string) (TranscriptionCharge, error)
	ChargesWithoutJob(ctx context.Context, createdBefore time.Time, limit int) ([]TranscriptionCharge, error)
	MarkTranscriptionJobCreated(ctx context.Context, chargeID int64, at time.Time) error
	RefundTranscription(ctx context.Context, chargePublicID, reason string, now time.Time) (refunded bool, err error)
	GetTranscriptionWork(ctx context.Context, chargePublicID string) (TranscriptionWork, error)
	SaveTranscriptText(ctx context.Context, chargePublicID string, in TranscriptText, now time.Time) (saved bool, err error)
	CompleteTranscriptSummary(ctx context.Context, chargePublicID string, in TranscriptSummary, links events.Links, now time.Time) (done bool, err error)
	NotifyAccountOwners(ctx context.Context, accountID int64, typ, title, body, url string, at time.Time) error
}

// Outbox is the webhook events waiting to be dispatched: claims, dispatch, wake-ups and
// recovery.
type Outbox interface {
	ClaimEvents(ctx context.Context, limit int, now time.Time, lease time.Duration) ([]PendingEvent, error)
	ClaimFairly(ctx context.Context, c FairClaim, now time.Time, lease time.Duration) (ClaimedEvents, error)
	MarkEventsDispatched(ctx context.Context, ids []uuid.UUID, at time.Time) error
	MarkEventDispatched(ctx context.Context, id uuid.UUID, at time.Time) error
	RenewEventClaims(ctx context.Context, ids []uuid.UUID, until time.Time) error
	ReleaseEvents(ctx context.Context, ids []uuid.UUID) error
	QueuedDeliveriesFor(ctx context.Context, accountID int64, f QueuedFilter) ([]QueuedDelivery, error)
	OutboxBacklog(ctx context.Context) (waiting int64, oldest time.Time, err error)
	ListenOutbox(ctx context.Context, queued func()) error
	QueueRecovery(ctx context.Context, r Recovery) (int, error)
}

// Deferred is the deliveries parked in PostgreSQL while kube-apiserver cannot take them.
type Deferred interface {
	DeferDelivery(ctx context.Context, d DeferredDelivery) error
	ClaimDeferred(ctx context.Context, c DeferredClaim, now time.Time, lease time.Duration) (ClaimedDeferred, error)
	DeleteDeferred(ctx context.Context, names []string) error
	ReleaseDeferred(ctx context.Context, names []string) error
	DeferredDeliveries(ctx context.Context) (int64, error)
}

// DeliveryHistory is finished webhook deliveries and the events they carried.
type DeliveryHistory interface {
	EventForDelivery(ctx context.Context, id uuid.UUID, deliveryName string) (ev WebhookEvent, recorded bool, err error)
	RecordFinishedDelivery(ctx context.Context, d FinishedDelivery) error
	DeliveryHistory(ctx context.Context, accountID int64, endpoint string, since time.Time, limit int) ([]FinishedDelivery, error)
	LatestFinishedDelivery(ctx context.Context, accountID int64, endpoint string, eventID uuid.UUID) (FinishedDelivery, error)
	EventBody(ctx context.Context, accountID int64, eventID uuid.UUID) ([]byte, error)
	RecordDeliveryAttempt(ctx context.Context, a DeliveryAttempt) error
	DeliveryAttempts(ctx context.Context, accountID int64, endpoint string, names []string, since time.Time) (map[string][]DeliveryAttempt, error)
}

// WebhookEndpoints is what PostgreSQL keeps of webhook endpoints: the per-account lock, the
// write versions and the switch-off notices.
type WebhookEndpoints interface {
	WebhookAccountLock(ctx context.Context, accountID int64) (release func(), err error)
	BeginEndpointWrite(ctx context.Context, accountPublicID string) error
	EndEndpointWrite(ctx context.Context, accountPublicID string, version uint64) error
	ClaimSwitchOffNotice(ctx context.Context, accountPublicID, endpointUID, endpointName string, failingSince, now time.Time) (bool, error)
	ReleaseSwitchOffNotice(ctx context.Context, endpointUID string, failingSince time.Time) error
	RecordSecretReveal(ctx context.Context, actor User, endpoint string, at time.Time) error
	SecretReveals(ctx context.Context, accountID int64, endpoint string, limit int) ([]SecretReveal, error)
}

// DeliveryMembers is the delivery fleet's heartbeats.
type DeliveryMembers interface {
	BeatDeliveryMember(ctx context.Context, id string, now time.Time, forget time.Duration) ([]DeliveryMember, error)
	LeaveDeliveryMember(ctx context.Context, id string) error
}

// Realtime is the live channel's grants, gates and event bodies.
type Realtime interface {
	GrantRealtime(ctx context.Context, socketID, channel string, keyID int64, now time.Time) error
	TakeRealtimeGrant(ctx context.Context, socketID, channel string) (RealtimeGrant, error)
	LiveRealtimeKeys(ctx context.Context, keyIDs []int64) ([]int64, error)
	RealtimeAccountGates(ctx context.Context, accountIDs []int64) ([]RealtimeAccountGate, error)
	PruneRealtimeGrants(ctx context.Context, before time.Time) (int64, error)
	OutboxEventBody(ctx context.Context, id string) (json.RawMessage, error)
}

// Retention is the partitions of the outbox and the history, and the pruning of the smaller
// growing tables.
type Retention interface {
	Partitions(ctx context.Context, table string) ([]Partition, error)
	CreatePartition(ctx context.Context, table string, from, to time.Time) error
	DropPartition(ctx context.Context, table, name string) error
	DefaultPartitionRows(ctx context.Context, table string, limit int) (int64, error)
	TableBytes(ctx context.Context, table string) (int64, error)
	PruneCallProgress(ctx context.Context, before time.Time, batch int) (int64, error)
	PruneSwitchOffNotices(ctx context.Context, before time.Time) (int64, error)
	PruneSecretReveals(ctx context.Context, before time.Time) (int64, error)
}

// Transactions runs work that must commit together as one unit (Tx).
type Transactions interface {
	InTx(ctx context.Context, fn func(*Tx) error) error
}

// Health answers whether PostgreSQL is reachable, for the readiness probe.
type Health interface {
	Ping(ctx context.Context) error
}

// *Store is every domain.
var (
	_ Accounts         = (*Store)(nil)
	_ Users            = (*Store)(nil)
	_ Keys             = (*Store)(nil)
	_ SignIn           = (*Store)(nil)
	_ RateLimits       = (*Store)(nil)
	_ Idempotency      = (*Store)(nil)
	_ Calls            = (*Store)(nil)
	_ BulkCalls        = (*Store)(nil)
	_ Recordings       = (*Store)(nil)
	_ Contacts         = (*Store)(nil)
	_ Inbox            = (*Store)(nil)
	_ Messages         = (*Store)(nil)
	_ Billing          = (*Store)(nil)
	_ Numbers          = (*Store)(nil)
	_ Transcriptions   = (*Store)(nil)
	_ Outbox           = (*Store)(nil)
	_ Deferred         = (*Store)(nil)
	_ DeliveryHistory  = (*Store)(nil)
	_ WebhookEndpoints = (*Store)(nil)
	_ DeliveryMembers  = (*Store)(nil)
	_ Realtime         = (*Store)(nil)
	_ Retention        = (*Store)(nil)
	_ Transactions     = (*Store)(nil)
	_ Health           = (*Store)(nil)
)
