package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The inbox: to-dos, notifications, message slips, job requests and blocked callers.

// ---------------------------------------------------------------- to-dos

// TaskUser is who ticked off a to-do.
type TaskUser struct {
	PublicID string
	Name     string
}

// TaskCall is the call a to-do was found in.
type TaskCall struct {
	PublicID    string
	FromE164    string
	ToE164      string
	NumberLabel string
	StartedAt   time.Time
}

// Task is a follow-up to-do found in a call.
type Task struct {
	ID             int64
	PublicID       string
	Text           string
	Status         string
	CallbackE164   *string
	Sentiment      *string
	Urgency        *string
	SummarySnippet *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	CompletedAt    *time.Time
	DoneBy         *TaskUser
	Call           *TaskCall
}

const taskSelect = `SELECT t.id, t.public_id, t.text, t.status, t.callback_e164, t.sentiment, t.urgency, t.summary_snippet,
		t.created_at, t.updated_at, t.completed_at, u.public_id, u.name,
		c.public_id, c.from_e164, c.to_e164, coalesce(n.label, ''), c.started_at
	FROM tasks t
	LEFT JOIN users u ON u.id = t.done_by_user_id
	LEFT JOIN calls c ON c.id = t.call_id
	LEFT JOIN numbers n ON n.id = c.number_id`

func scanTask(row pgx.Row) (Task, error) {
	var t Task
	var userID, userName, callID, callFrom, callTo, callLabel *string
	var callStarted *time.Time
	err := row.Scan(&t.ID, &t.PublicID, &t.Text, &t.Status, &t.CallbackE164, &t.Sentiment, &t.Urgency, &t.SummarySnippet,
		&t.CreatedAt, &t.UpdatedAt, &t.CompletedAt, &userID, &userName,
		&callID, &callFrom, &callTo, &callLabel, &callStarted)
	if err != nil {
		return Task{}, err
	}
	if userID != nil {
		t.DoneBy = &TaskUser{PublicID: *userID, Name: *userName}
	}
	if callID != nil {
		t.Call = &TaskCall{PublicID: *callID, FromE164: *callFrom, ToE164: *callTo, NumberLabel: *callLabel, StartedAt: *callStarted}
	}
	return t, nil
}

// ListTasks returns one page of the account's to-dos, newest first, and the total.
// status is open, done or all.
func (s *Store) ListTasks(ctx context.Context, accountID int64, status string, limit, offset int) ([]Task, int, error) {
	// The status condition is left out for "all" rather than written as "$2 = 'all' OR ...",
	// which a generic plan could not turn into an index condition.
	where, args := `t.account_id = $1`, []any{accountID}
	if status != "all" {
		where, args = where+` AND t.status = $2`, append(args, status)
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM tasks t WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	args = append(args, limit, offset)
	rows, err := s.pool.Query(ctx, taskSelect+` WHERE `+where+
		fmt.Sprintf(` ORDER BY t.created_at DESC, t.id DESC LIMIT $%d OFFSET $%d`, len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Task, error) { return scanTask(r) })
	return list, total, err
}

// GetTask returns one of the account's to-dos.
func (s *Store) GetTask(ctx context.Context, accountID int64, publicID string) (Task, error) {
	t, err := scanTask(s.pool.QueryRow(ctx, taskSelect+` WHERE t.account_id = $1 AND t.public_id = $2`, accountID, publicID))
	return t, notFound(err)
}

// SetTaskStatus ticks a to-do off (done: userID is recorded as done_by, completed_at = at) or
// opens it again (open: both cleared). Setting the status it already has changes nothing, so
// the first person to tick it off stays recorded.
func (s *Store) SetTaskStatus(ctx context.Context, accountID int64, publicID, status string, userID int64, at time.Time) (Task, error) {
	var err error
	switch status {
	case "done":
		_, err = s.pool.Exec(ctx, `UPDATE tasks SET status = 'done', done_by_user_id = $3, completed_at = $4, updated_at = $4
			WHERE account_id = $1 AND public_id = $2 AND status <> 'done'`, accountID, publicID, userID, at)
	case "open":
		_, err = s.pool.Exec(ctx, `UPDATE tasks SET status = 'open', done_by_user_id = NULL, completed_at = NULL, updated_at = $3
			WHERE account_id = $1 AND public_id = $2 AND status <> 'open'`, accountID, publicID, at)
	default:
		return Task{}, fmt.Errorf("status must be open or done, not %q", status)
	}
	if err != nil {
		return Task{}, err
	}
	return s.GetTask(ctx, accountID, publicID)
}

// NewTask is a to-do to add (found in a call by the summariser; also seeding and tests).
type NewTask struct {
	AccountID      int64
	CallID         *int64
	Text           string
	CallbackE164   *string
	Sentiment      *string
	Urgency        *string
	SummarySnippet *string
	CreatedAt      time.Time // default now
}

// CreateTask adds an open to-do.
func (s *Store) CreateTask(ctx context.Context, in NewTask) (Task, error) {
	if in.CreatedAt.IsZero() {
		in.CreatedAt = time.Now()
	}
	pid := NewPublicID(PrefixTask)
	if _, err := s.pool.Exec(ctx, `INSERT INTO tasks (account_id, public_id, call_id, text, callback_e164, sentiment, urgency,
			summary_snippet, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		in.AccountID, pid, in.CallID, in.Text, in.CallbackE164, in.Sentiment, in.Urgency, in.SummarySnippet, in.CreatedAt); err != nil {
		return Task{}, err
	}
	return s.GetTask(ctx, in.AccountID, pid)
}

// ---------------------------------------------------------------- notifications

// Notification is a message to one user.
type Notification struct {
	ID        string
	Type      string
	Title     string
	Body      string
	URL       string
	Read      bool
	CreatedAt time.Time
	ReadAt    *time.Time
}

const notificationColumns = `id::text, type, title, body, url, read_at IS NOT NULL, created_at, read_at`

func scanNotification(row pgx.Row) (Notification, error) {
	var n Notification
	err := row.Scan(&n.ID, &n.Type, &n.Title, &n.Body, &n.URL, &n.Read, &n.CreatedAt, &n.ReadAt)
	return n, err
}

// ListNotifications returns one page of a user's own notifications, newest first, the number
// matching, and the user's unread total (whatever the filter).
func (s *Store) ListNotifications(ctx context.Context, accountID, userID int64, unreadOnly bool, limit, offset int) (list []Notification, total, unread int, err error) {
	where := `account_id = $1 AND user_id = $2`
	if unreadOnly {
		where += ` AND read_at IS NULL`
	}
	err = s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE read_at IS NULL)
		FROM notifications WHERE account_id = $1 AND user_id = $2`, accountID, userID).Scan(&total, &unread)
	if err != nil {
		return nil, 0, 0, err
	}
	if unreadOnly {
		total = unread
	}
	// Ids are random UUIDs, so the tie-break on id only makes the order stable; ascending
	// follows the indexes (user_id, created_at DESC, id). The column is qualified: a bare "id"
	// would name the selected id::text, which no index holds.
	rows, err := s.pool.Query(ctx, `SELECT `+notificationColumns+` FROM notifications WHERE `+where+`
		ORDER BY notifications.created_at DESC, notifications.id LIMIT $3 OFFSET $4`, accountID, userID, limit, offset)
	if err != nil {
		return nil, 0, 0, err
	}
	list, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Notification, error) { return scanNotification(r) })
	return list, total, unread, err
}

// UnreadNotifications is a user's unread total.
func (s *Store) UnreadNotifications(ctx context.Context, accountID, userID int64) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE account_id = $1 AND user_id = $2 AND read_at IS NULL`,
		accountID, userID).Scan(&n)
	return n, err
}

// MarkNotificationRead marks one of the user's notifications read (a read one keeps its read_at)
// and returns the user's unread total after. An id that is not a UUID, or names another
// user's notification, gives ErrNotFound.
func (s *Store) MarkNotificationRead(ctx context.Context, accountID, userID int64, id string, at time.Time) (string, int, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", 0, ErrNotFound
	}
	var canonical string
	err = s.pool.QueryRow(ctx, `UPDATE notifications SET read_at = coalesce(read_at, $4)
		WHERE account_id = $1 AND user_id = $2 AND id = $3 RETURNING id::text`, accountID, userID, u.String(), at).Scan(&canonical)
	if err != nil {
		return "", 0, notFound(err)
	}
	unread, err := s.UnreadNotifications(ctx, accountID, userID)
	return canonical, unread, err
}

// MarkAllNotificationsRead marks every unread notification of the user read and returns the
// unread total after (0 unless one arrived meanwhile).
func (s *Store) MarkAllNotificationsRead(ctx context.Context, accountID, userID int64, at time.Time) (int, error) {
	if _, err := s.pool.Exec(ctx, `UPDATE notifications SET read_at = $3
		WHERE account_id = $1 AND user_id = $2 AND read_at IS NULL`, accountID, userID, at); err != nil {
		return 0, err
	}
	return s.UnreadNotifications(ctx, accountID, userID)
}

// NewNotification is a notification to send a user (used by the platform, seeding and tests).
type NewNotification struct {
	AccountID int64
	UserID    int64
	Type      string
	Title     string
	Body      string
	URL       string
	CreatedAt time.Time // default now
}

// CreateNotification adds an unread notification with a fresh UUID.
func (s *Store) CreateNotification(ctx context.Context, in NewNotification) (Notification, error) {
	if in.CreatedAt.IsZero() {
		in.CreatedAt = time.Now()
	}
	id, err := uuid.NewRandom()
	if err != nil {
		return Notification{}, err
	}
	return scanNotification(s.pool.QueryRow(ctx, `INSERT INTO notifications (id, account_id, user_id, type, title, body, url, created_at)
		SELECT $1, $2, u.id, $4, $5, $6, $7, $8 FROM users u WHERE u.id = $3 AND u.account_id = $2
		RETURNING `+notificationColumns, id.String(), in.AccountID, in.UserID, in.Type, in.Title, in.Body, in.URL, in.CreatedAt))
}

// ---------------------------------------------------------------- message slips

// MessageSlip is a message left with the virtual receptionist.
type MessageSlip struct {
	ID                       int64
	PublicID                 string
	FromE164                 string
	Department               string
	ReceivedAt               time.Time
	HeardAt                  *time.Time
	NameRecordingPublicID    *string
	MessageRecordingPublicID *string
	TranscriptStatus         string
	CallerName               string
	SummaryStatus            string
	Sentiment                *string
	Urgency                  *string
}

// SlipFilter selects message slips. Empty fields do not filter.
type SlipFilter struct {
	// Digits is part of the caller's number as international digits; Search says a number
	// search was asked for (one without digits matches nothing).
	Search    bool
	Digits    string
	From, To  *time.Time // received_at in [From, To)
	Heard     *bool
	Sentiment string
	Urgency   string
}

const slipSelect = `SELECT s.id, s.public_id, s.from_e164, s.department, s.received_at, s.heard_at,
		rn.public_id, rm.public_id, s.transcript_status, s.caller_name, s.summary_status, s.sentiment, s.urgency
	FROM message_slips s
	LEFT JOIN recordings rn ON rn.id = s.name_recording_id AND rn.deleted_at IS NULL
	LEFT JOIN recordings rm ON rm.id = s.message_recording_id AND rm.deleted_at IS NULL`

func scanSlip(row pgx.Row) (MessageSlip, error) {
	var m MessageSlip
	err := row.Scan(&m.ID, &m.PublicID, &m.FromE164, &m.Department, &m.ReceivedAt, &m.HeardAt,
		&m.NameRecordingPublicID, &m.MessageRecordingPublicID, &m.TranscriptStatus, &m.CallerName, &m.SummaryStatus,
		&m.Sentiment, &m.Urgency)
	return m, err
}

// ListMessageSlips returns one page of the account's message slips, newest first, and the total.
func (s *Store) ListMessageSlips(ctx context.Context, accountID int64, f SlipFilter, limit, offset int) ([]MessageSlip, int, error) {
	if f.Search && f.Digits == "" {
		return []MessageSlip{}, 0, nil
	}
	conds := []string{"s.account_id = $1"}
	args := []any{accountID}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.Digits != "" {
		add(`s.from_e164 LIKE '%%' || $%d || '%%'`, f.Digits)
	}
	if f.From != nil {
		add(`s.received_at >= $%d`, *f.From)
	}
	if f.To != nil {
		add(`s.received_at < $%d`, *f.To)
	}
	if f.Heard != nil {
		if *f.Heard {
			conds = append(conds, "s.heard_at IS NOT NULL")
		} else {
			conds = append(conds, "s.heard_at IS NULL")
		}
	}
	if f.Sentiment != "" {
		add(`s.sentiment = $%d`, f.Sentiment)
	}
	if f.Urgency != "" {
		add(`s.urgency = $%d`, f.Urgency)
	}
	where := strings.Join(conds, " AND ")
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM message_slips s WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	args = append(args, limit, offset)
	rows, err := s.pool.Query(ctx, slipSelect+` WHERE `+where+fmt.Sprintf(` ORDER BY s.received_at DESC, s.id DESC LIMIT $%d OFFSET $%d`,
		len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MessageSlip, error) { return scanSlip(r) })
	return list, total, err
}

// NewMessageSlip is a message slip to add (from the receptionist; also seeding and tests).
type NewMessageSlip struct {
	AccountID        int64
	NumberID         *int64
	CallID           *int64
	FromE164         string
	Department       string
	CallerName       string
	ReceivedAt       time.Time
	HeardAt          *time.Time
	TranscriptStatus string // default pending
	SummaryStatus    string // default pending
	Sentiment        *string
	Urgency          *string
	// NameRecording and MessageRecording, when true, add the slip's recordings.
	NameRecording    bool
	MessageRecording bool
}

// CreateMessageSlip adds a slip and its recordings in one transaction.
func (s *Store) CreateMessageSlip(ctx context.Context, in NewMessageSlip) (MessageSlip, error) {
	if in.TranscriptStatus == "" {
		in.TranscriptStatus = "pending"
	}
	if in.SummaryStatus == "" {
		in.SummaryStatus = "pending"
	}
	var out MessageSlip
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO message_slips (account_id, public_id, number_id, call_id, from_e164, department,
				caller_name, received_at, heard_at, transcript_status, summary_status, sentiment, urgency)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
			in.AccountID, NewPublicID(PrefixSlip), in.NumberID, in.CallID, in.FromE164, in.Department, in.CallerName,
			in.ReceivedAt, in.HeardAt, in.TranscriptStatus, in.SummaryStatus, in.Sentiment, in.Urgency).Scan(&id); err != nil {
			return err
		}
		for _, rec := range []struct {
			want         bool
			kind, column string
		}{{in.NameRecording, "slip_name", "name_recording_id"}, {in.MessageRecording, "slip_message", "message_recording_id"}} {
			if !rec.want {
				continue
			}
			pid := NewPublicID(PrefixRecording)
			var recID int64
			if err := tx.QueryRow(ctx, `INSERT INTO recordings (account_id, public_id, message_slip_id, kind, storage_key, created_at)
				VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
				in.AccountID, pid, id, rec.kind, "slips/"+pid+".wav", in.ReceivedAt).Scan(&recID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE message_slips SET `+rec.column+` = $2 WHERE id = $1`, id, recID); err != nil {
				return err
			}
		}
		var err error
		out, err = scanSlip(tx.QueryRow(ctx, slipSelect+` WHERE s.id = $1`, id))
		return err
	})
	return out, err
}

// ---------------------------------------------------------------- job requests

// JobRequest is a job picked out of a message slip or a call.
type JobRequest struct {
	ID            int64
	PublicID      string
	Status        string
	CallerName    string
	CallerE164    string
	ContactE164   *string
	LineE164      *string
	LineLabel     *string
	JobType       string
	Description   string
	Address       *string
	Postcode      *string
	PreferredWhen *string
	PreferredDate *string
	CreatedAt     time.Time
}

const jobRequestSelect = `SELECT j.id, j.public_id, j.status, j.caller_name, j.caller_e164, j.contact_e164, n.e164, n.label,
		j.job_type, j.description, j.address, j.postcode, j.preferred_when, to_char(j.preferred_date, 'YYYY-MM-DD'), j.created_at
	FROM job_requests j LEFT JOIN numbers n ON n.id = j.number_id`

func scanJobRequest(row pgx.Row) (JobRequest, error) {
	var j JobRequest
	err := row.Scan(&j.ID, &j.PublicID, &j.Status, &j.CallerName, &j.CallerE164, &j.ContactE164, &j.LineE164, &j.LineLabel,
		&j.JobType, &j.Description, &j.Address, &j.Postcode, &j.PreferredWhen, &j.PreferredDate, &j.CreatedAt)
	return j, err
}

// ListJobRequests returns one page of the account's job requests in statuses, newest first,
// and the total. Empty statuses means every status.
func (s *Store) ListJobRequests(ctx context.Context, accountID int64, statuses []string, limit, offset int) ([]JobRequest, int, error) {
	where, args := `j.account_id = $1`, []any{accountID}
	switch len(statuses) {
	case 0:
	case 1:
		// Equality, not "= ANY": an index scan over an array condition does not keep date order.
		where, args = where+` AND j.status = $2`, append(args, statuses[0])
	default:
		where, args = where+` AND j.status = ANY ($2::text[])`, append(args, statuses)
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM job_requests j WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	args = append(args, limit, offset)
	rows, err := s.pool.Query(ctx, jobRequestSelect+` WHERE `+where+
		fmt.Sprintf(` ORDER BY j.created_at DESC, j.id DESC LIMIT $%d OFFSET $%d`, len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (JobRequest, error) { return scanJobRequest(r) })
	return list, total, err
}

// NewJobRequest is a job request to add (from slips and calls; also seeding and tests).
type NewJobRequest struct {
	AccountID     int64
	Status        string // default new
	NumberID      *int64
	CallID        *int64
	MessageSlipID *int64
	CallerName    string
	CallerE164    string
	ContactE164   *string
	JobType       string
	Description   string
	Address       *string
	Postcode      *string
	PreferredWhen *string
	PreferredDate *time.Time // the date part is used
	CreatedAt     time.Time  // default now
}

// CreateJobRequest adds a job request.
func (s *Store) CreateJobRequest(ctx context.Context, in NewJobRequest) (JobRequest, error) {
	if in.Status == "" {
		in.Status = "new"
	}
	if in.CreatedAt.IsZero() {
		in.CreatedAt = time.Now()
	}
	var date *string
	if in.PreferredDate != nil {
		d := in.PreferredDate.Format(time.DateOnly)
		date = &d
	}
	var id int64
	if err := s.pool.QueryRow(ctx, `INSERT INTO job_requests (account_id, public_id, status, number_id, call_id, message_slip_id,
			caller_name, caller_e164, contact_e164, job_type, description, address, postcode, preferred_when, preferred_date, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::date, $16) RETURNING id`,
		in.AccountID, NewPublicID(PrefixJobRequest), in.Status, in.NumberID, in.CallID, in.MessageSlipID, in.CallerName,
		in.CallerE164, in.ContactE164, in.JobType, in.Description, in.Address, in.Postcode, in.PreferredWhen, date,
		in.CreatedAt).Scan(&id); err != nil {
		return JobRequest{}, err
	}
	return scanJobRequest(s.pool.QueryRow(ctx, jobRequestSelect+` WHERE j.id = $1`, id))
}

// ---------------------------------------------------------------- blocked callers

// BlockedCallerNumber is the number a block applies to.
type BlockedCallerNumber struct {
	PublicID string
	E164     string
	Label    string
}

// BlockedCaller is a caller whose calls are rejected or sent straight to voicemail.
type BlockedCaller struct {
	ID       int64
	PublicID string
	E164     string
	Action   string
	Label    string
	Number   *BlockedCallerNumber
	// CreatedAt is the day the block was added, in the account's time zone.
	CreatedAt string
	Created   time.Time
}

// ListBlockedCallers returns all the account's blocked callers, newest first; created_at is
// the day in loc.
func (s *Store) ListBlockedCallers(ctx context.Context, accountID int64, loc *time.Location) ([]BlockedCaller, error) {
	rows, err := s.pool.Query(ctx, `SELECT b.id, b.public_id, b.e164, b.action, b.label, b.created_at, n.public_id, n.e164, n.label
		FROM blocked_callers b LEFT JOIN numbers n ON n.id = b.number_id
		WHERE b.account_id = $1 ORDER BY b.created_at DESC, b.id DESC`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (BlockedCaller, error) {
		var b BlockedCaller
		var numID, numE164, numLabel *string
		if err := r.Scan(&b.ID, &b.PublicID, &b.E164, &b.Action, &b.Label, &b.Created, &numID, &numE164, &numLabel); err != nil {
			return b, err
		}
		b.CreatedAt = b.Created.In(loc).Format(time.DateOnly)
		if numID != nil {
			b.Number = &BlockedCallerNumber{PublicID: *numID, E164: *numE164, Label: *numLabel}
		}
		return b, nil
	})
}

// NewBlockedCaller is a block to add (from the portal; also seeding and tests).
type NewBlockedCaller struct {
	AccountID int64
	E164      string
	Action    string // reject or voicemail
	Label     string
	NumberID  *int64 // nil: every number
	CreatedAt time.Time
}

// CreateBlockedCaller adds a block and returns its public_id.
func (s *Store) CreateBlockedCaller(ctx context.Context, in NewBlockedCaller) (string, error) {
	if in.CreatedAt.IsZero() {
		in.CreatedAt = time.Now()
	}
	pid := NewPublicID(PrefixBlockedCaller)
	_, err := s.pool.Exec(ctx, `INSERT INTO blocked_callers (account_id, public_id, e164, action, label, number_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, in.AccountID, pid, in.E164, in.Action, in.Label, in.NumberID, in.CreatedAt)
	return pid, err
}
