package store

import "context"

// MissingAccounts answers which of the account public ids PostgreSQL does not hold (after a
// restore whose etcd is newer than its database, endpoints name such accounts).
func (s *Store) MissingAccounts(ctx context.Context, publicIDs []string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM unnest($1::text[]) AS ids(id)
		WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE public_id = ids.id) ORDER BY id`, publicIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var missing []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		missing = append(missing, id)
	}
	return missing, rows.Err()
}
