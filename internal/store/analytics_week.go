package store

import (
	"context"
	"fmt"
	"time"
)

// CallsByWeekHour counts the account's business calls (those not filtered by call protection,
// as CallAnalytics counts them) of the last days calendar days in loc (AnalyticsWindow) by the
// weekday and hour they started at in loc: [0] is Monday, [6] Sunday. Summed over weekdays it
// is CallAnalytics' ByHour; the analytics have no weekday split, so this reads the window's
// calls.
func (s *Store) CallsByWeekHour(ctx context.Context, accountID int64, days int, loc *time.Location, now time.Time) ([7][24]int, error) {
	var out [7][24]int
	from, to, _ := AnalyticsWindow(now, loc, days)
	rows, err := s.pool.Query(ctx, `SELECT extract(isodow FROM started_at AT TIME ZONE $2)::int, extract(hour FROM started_at AT TIME ZONE $2)::int, count(*)
		FROM calls WHERE account_id = $1 AND started_at >= $3 AND started_at < $4 AND NOT filtered
		GROUP BY 1, 2`, accountID, loc.String(), from, to)
	if err != nil {
		return out, fmt.Errorf("calls by weekday and hour: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var dow, hour, n int
		if err := rows.Scan(&dow, &hour, &n); err != nil {
			return out, err
		}
		if dow >= 1 && dow <= 7 && hour >= 0 && hour < 24 {
			out[dow-1][hour] = n
		}
	}
	return out, rows.Err()
}
