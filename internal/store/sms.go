package store

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// SMSConversation is a text-message thread: one per number and other party.
type SMSConversation struct {
	ID                 int64
	PublicID           string
	CounterpartyE164   string
	NumberE164         string
	NumberLabel        string
	LastMessagePreview string
	LastMessageAt      time.Time
	UnreadCount        int
}

// SMSMessage is one text message of a conversation.
type SMSMessage struct {
	ID                   int64
	ConversationPublicID string
	Direction            string
	FromE164             string
	ToE164               string
	Body                 string
	Status               string
	Segments             int
	ReceivedAt           time.Time
}

const smsConversationColumns = `c.id, c.public_id, c.counterparty_e164, n.e164, n.label, c.last_message_preview, c.last_message_at, c.unread_count`

func scanSMSConversation(dst *SMSConversation) []any {
	return []any{&dst.ID, &dst.PublicID, &dst.CounterpartyE164, &dst.NumberE164, &dst.NumberLabel,
		&dst.LastMessagePreview, &dst.LastMessageAt, &dst.UnreadCount}
}

// ListSMSConversations returns one page of the account's threads, most recent first, and the total.
func (s *Store) ListSMSConversations(ctx context.Context, accountID int64, limit, offset int) ([]SMSConversation, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sms_conversations WHERE account_id = $1`, accountID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+smsConversationColumns+`
		FROM sms_conversations c JOIN numbers n ON n.id = c.number_id
		WHERE c.account_id = $1
		ORDER BY c.last_message_at DESC, c.id DESC LIMIT $2 OFFSET $3`, accountID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SMSConversation, error) {
		var c SMSConversation
		return c, r.Scan(scanSMSConversation(&c)...)
	})
	return list, total, err
}

// GetSMSConversation returns one of the account's threads.
func (s *Store) GetSMSConversation(ctx context.Context, accountID int64, publicID string) (SMSConversation, error) {
	var c SMSConversation
	err := s.pool.QueryRow(ctx, `SELECT `+smsConversationColumns+`
		FROM sms_conversations c JOIN numbers n ON n.id = c.number_id
		WHERE c.account_id = $1 AND c.public_id = $2`, accountID, publicID).Scan(scanSMSConversation(&c)...)
	if err != nil {
		return SMSConversation{}, notFound(err)
	}
	return c, nil
}

// ListSMSMessages returns one page of a thread's messages, oldest first, and the total.
// conv must already belong to the account asking (see GetSMSConversation).
func (s *Store) ListSMSMessages(ctx context.Context, conv SMSConversation, limit, offset int) ([]SMSMessage, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sms_messages WHERE conversation_id = $1`, conv.ID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, direction, from_e164, to_e164, body, status, segments, received_at
		FROM sms_messages WHERE conversation_id = $1
		ORDER BY received_at, id LIMIT $2 OFFSET $3`, conv.ID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SMSMessage, error) {
		m := SMSMessage{ConversationPublicID: conv.PublicID}
		return m, r.Scan(&m.ID, &m.Direction, &m.FromE164, &m.ToE164, &m.Body, &m.Status, &m.Segments, &m.ReceivedAt)
	})
	return list, total, err
}

// NewSMSMessage is a text message to record (used by the platform's reports, seeding and tests).
type NewSMSMessage struct {
	AccountID        int64
	NumberID         int64
	CounterpartyE164 string
	Direction        string // inbound or outbound
	Body             string
	Status           string // default "received" inbound, "sent" outbound
	Segments         int    // default 1
	ReceivedAt       time.Time
}

// previewLength is how many characters of the latest message a thread shows.
const previewLength = 100

// AddSMSMessage stores a message in its thread (created on the first message between the number
// and the other party) and moves the thread's latest-message fields forward. Inbound messages
// count as unread.
func (s *Store) AddSMSMessage(ctx context.Context, in NewSMSMessage) (SMSMessage, error) {
	if in.Direction != "inbound" && in.Direction != "outbound" {
		return SMSMessage{}, fmt.Errorf("direction must be inbound or outbound, not %q", in.Direction)
	}
	if in.Status == "" {
		in.Status = map[string]string{"inbound": "received", "outbound": "sent"}[in.Direction]
	}
	if in.Segments == 0 {
		in.Segments = 1
	}
	preview := in.Body
	if utf8.RuneCountInString(preview) > previewLength {
		preview = string([]rune(preview)[:previewLength])
	}
	unread := 0
	if in.Direction == "inbound" {
		unread = 1
	}
	out := SMSMessage{Direction: in.Direction, Body: in.Body, Status: in.Status, Segments: in.Segments, ReceivedAt: in.ReceivedAt}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var numberE164 string
		if err := tx.QueryRow(ctx, `SELECT e164 FROM numbers WHERE id = $1 AND account_id = $2`, in.NumberID, in.AccountID).Scan(&numberE164); err != nil {
			return notFound(err)
		}
		var convID int64
		err := tx.QueryRow(ctx, `INSERT INTO sms_conversations (account_id, public_id, number_id, counterparty_e164,
				last_message_at, last_message_preview, unread_count)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (number_id, counterparty_e164) DO UPDATE SET
				last_message_at = GREATEST(sms_conversations.last_message_at, EXCLUDED.last_message_at),
				last_message_preview = CASE WHEN EXCLUDED.last_message_at >= sms_conversations.last_message_at
					THEN EXCLUDED.last_message_preview ELSE sms_conversations.last_message_preview END,
				unread_count = sms_conversations.unread_count + EXCLUDED.unread_count
			RETURNING id, public_id`,
			in.AccountID, NewPublicID(PrefixConversation), in.NumberID, in.CounterpartyE164, in.ReceivedAt, preview, unread).
			Scan(&convID, &out.ConversationPublicID)
		if err != nil {
			return err
		}
		out.FromE164, out.ToE164 = in.CounterpartyE164, numberE164
		if in.Direction == "outbound" {
			out.FromE164, out.ToE164 = numberE164, in.CounterpartyE164
		}
		return tx.QueryRow(ctx, `INSERT INTO sms_messages (account_id, conversation_id, public_id, direction, from_e164,
				to_e164, body, status, segments, received_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			in.AccountID, convID, NewPublicID(PrefixMessage), in.Direction, out.FromE164, out.ToE164, in.Body, in.Status,
			in.Segments, in.ReceivedAt).Scan(&out.ID)
	})
	return out, err
}
