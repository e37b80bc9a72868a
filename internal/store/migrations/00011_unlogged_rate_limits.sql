-- +goose Up
-- Rate-limit counters need no crash safety: after a crash a window restarts from zero, which
-- at worst lets a user through a few more requests in that minute. Logged, every API request
-- committed a WAL flush on its user's counter row, and that row stays locked until the flush
-- ends, so one user's requests were serialised at the disk's flush rate. Unlogged tables
-- write no WAL.
ALTER TABLE rate_limit_windows SET UNLOGGED;

-- +goose Down
ALTER TABLE rate_limit_windows SET LOGGED;
