-- +goose Up
-- Indexes for the inbox lists whose filters 00001's indexes do not serve in list order.

-- GET /tasks?status=all: every to-do of the account, newest first. (status=open and done use
-- tasks_account_status_created.)
CREATE INDEX tasks_account_created ON tasks (account_id, created_at DESC, id DESC);

-- GET /job-requests?status=all, and the default status=open (new and confirmed), which a single
-- range of job_requests_account_status_created cannot return in date order: read newest first
-- and keep the wanted statuses.
CREATE INDEX job_requests_account_created ON job_requests (account_id, created_at DESC, id DESC);

-- GET /notifications?unread=1: the user's unread ones newest first (also counts unread_count).
CREATE INDEX notifications_user_unread_created ON notifications (user_id, created_at DESC, id) WHERE read_at IS NULL;

-- +goose Down
DROP INDEX IF EXISTS notifications_user_unread_created;
DROP INDEX IF EXISTS job_requests_account_created;
DROP INDEX IF EXISTS tasks_account_created;
