-- +goose Up
-- The account portal (internal/portal). sessions is the table of the scs PostgreSQL session
-- store (github.com/alexedwards/scs/pgxstore), shared by every replica; the data is scs's own
-- encoding of the signed-in user's id. Expired rows are deleted by the leader's pruner.
CREATE TABLE sessions (
    token text PRIMARY KEY,
    data bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

-- One-time sign-in links: only the SHA-256 of the link's secret is kept. A link is used by
-- setting used_at, once; rows past their expiry are deleted by the leader's pruner.
CREATE TABLE portal_sign_in_links (
    token_sha256 bytea PRIMARY KEY,
    user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at timestamptz
);
CREATE INDEX portal_sign_in_links_expires_idx ON portal_sign_in_links (expires_at);
CREATE INDEX portal_sign_in_links_user_idx ON portal_sign_in_links (user_id);

-- Sign-in finds the users of an email on every account.
CREATE INDEX users_email_idx ON users (lower(email)) WHERE left_at IS NULL;

-- +goose Down
DROP INDEX users_email_idx;
DROP TABLE portal_sign_in_links;
DROP TABLE sessions;
