package store

import "context"

// GetContact reads one of the account's contacts (the portal's edit form; the API has no
// single-contact read). Another account's contact is ErrNotFound.
func (s *Store) GetContact(ctx context.Context, accountID int64, publicID string) (Contact, error) {
	return scanContact(s.pool.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts c WHERE c.account_id = $1 AND c.public_id = $2`,
		accountID, publicID))
}
