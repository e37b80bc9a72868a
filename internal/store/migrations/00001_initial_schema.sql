-- +goose Up
-- The whole v1 data model. Money is integer pence (bigint) everywhere.
-- Every table that holds an account's data carries account_id, and every
-- lookup by public_id is scoped by it, so another account's ids are simply not found.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE accounts (
    id                          bigserial PRIMARY KEY,
    public_id                   text NOT NULL UNIQUE,
    name                        text NOT NULL,
    status                      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
    plan                        text NOT NULL CHECK (plan IN ('starter', 'team', 'business')),
    addons                      text[] NOT NULL DEFAULT '{}',
    -- service-side switch for the Integrations add-on ("platform_disabled").
    integrations_disabled       boolean NOT NULL DEFAULT false,
    -- service-side switch for transcription ("transcription" platform switch).
    transcription_disabled      boolean NOT NULL DEFAULT false,
    time_zone                   text NOT NULL DEFAULT 'Europe/London',
    daily_spend_limit_pence     bigint NOT NULL DEFAULT 5000 CHECK (daily_spend_limit_pence >= 0),
    transcription_rate_pence_per_min integer NOT NULL DEFAULT 5 CHECK (transcription_rate_pence_per_min >= 0),
    monthly_allowance_minutes   integer NOT NULL DEFAULT 0 CHECK (monthly_allowance_minutes >= 0),
    bundle_minutes              integer NOT NULL DEFAULT 0 CHECK (bundle_minutes >= 0),
    -- Always equal to the sum of ledger_entries.amount_pence; both change in one transaction.
    balance_pence               bigint NOT NULL DEFAULT 0 CHECK (balance_pence >= 0),
    shared_links_revoked_before timestamptz,
    created_at                  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id                     bigserial PRIMARY KEY,
    account_id             bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id              text NOT NULL UNIQUE,
    name                   text NOT NULL,
    email                  text NOT NULL,
    role                   text NOT NULL CHECK (role IN ('owner', 'member')),
    can_manage_api_keys    boolean NOT NULL DEFAULT false,
    can_transcribe         boolean NOT NULL DEFAULT false,
    left_at                timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, email)
);

CREATE TABLE api_keys (
    id            bigserial PRIMARY KEY,
    account_id    bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    user_id       bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    public_id     text NOT NULL UNIQUE,
    name          text NOT NULL,
    -- First characters of the key, for recognising it in lists. The key itself is never stored.
    display_prefix text NOT NULL,
    token_sha256  bytea NOT NULL UNIQUE,
    abilities     text[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_keys_auto_transcribe ON api_keys (account_id) WHERE revoked_at IS NULL AND 'auto-transcribe' = ANY (abilities);

-- Fixed one-minute windows of request counts, shared by every API replica.
CREATE TABLE rate_limit_windows (
    subject      text NOT NULL,
    window_start timestamptz NOT NULL,
    count        integer NOT NULL,
    PRIMARY KEY (subject, window_start)
);

CREATE TABLE business_profiles (
    id         bigserial PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id  text NOT NULL UNIQUE,
    name       text NOT NULL
);

CREATE TABLE numbers (
    id                              bigserial PRIMARY KEY,
    account_id                      bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id                       text NOT NULL UNIQUE,
    e164                            text NOT NULL,
    label                           text NOT NULL DEFAULT '',
    status                          text NOT NULL DEFAULT 'assigned' CHECK (status IN ('assigned', 'porting', 'releasing', 'released')),
    ownership                       text NOT NULL DEFAULT 'rented' CHECK (ownership IN ('rented', 'ported')),
    business_profile_id             bigint REFERENCES business_profiles(id) ON DELETE SET NULL,
    release_at                      timestamptz,
    sms_capable                     boolean NOT NULL DEFAULT false,
    sms_ready                       boolean NOT NULL DEFAULT false,
    cli_eligible                    boolean NOT NULL DEFAULT false,
    cli_verified                    boolean NOT NULL DEFAULT false,
    is_default_caller_id            boolean NOT NULL DEFAULT false,
    forward_cli_mode                text NOT NULL DEFAULT 'caller' CHECK (forward_cli_mode IN ('caller', 'own', 'platform')),
    platform_e164                   text,
    voicemail_transcription_enabled boolean NOT NULL DEFAULT true,
    call_transcription_enabled      boolean NOT NULL DEFAULT false,
    privacy_mode_enabled            boolean NOT NULL DEFAULT false,
    -- How long voicemail shared pages stay valid.
    shared_link_lifetime_hours      integer NOT NULL DEFAULT 168 CHECK (shared_link_lifetime_hours > 0),
    created_at                      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX numbers_live_e164 ON numbers (e164) WHERE status <> 'released';
CREATE INDEX numbers_account ON numbers (account_id, e164);

-- Routing is read-only over the API; route details are kept as the platform sends them.
CREATE TABLE number_routes (
    id                 bigserial PRIMARY KEY,
    number_id          bigint NOT NULL REFERENCES numbers(id) ON DELETE CASCADE,
    kind               text NOT NULL CHECK (kind IN ('default', 'schedule', 'override')),
    position           integer NOT NULL DEFAULT 0,
    name               text NOT NULL DEFAULT '',
    windows            jsonb NOT NULL DEFAULT '[]',
    mode               text NOT NULL CHECK (mode IN ('forward', 'voicemail', 'ivr', 'receptionist')),
    recording_enabled  boolean NOT NULL DEFAULT false,
    voicemail_fallback boolean NOT NULL DEFAULT true,
    whisper            boolean NOT NULL DEFAULT false,
    ai_cover           text NOT NULL DEFAULT 'off',
    forward_targets    jsonb NOT NULL DEFAULT '[]',
    ivr                jsonb NOT NULL DEFAULT '{"options": []}',
    override_until     timestamptz
);
CREATE UNIQUE INDEX number_routes_one_default ON number_routes (number_id) WHERE kind = 'default';
CREATE UNIQUE INDEX number_routes_one_override ON number_routes (number_id) WHERE kind = 'override';

CREATE TABLE calls (
    id                       bigserial PRIMARY KEY,
    account_id               bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id                text NOT NULL UNIQUE,
    number_id                bigint REFERENCES numbers(id) ON DELETE SET NULL,
    from_e164                text NOT NULL,
    to_e164                  text NOT NULL,
    caller_name              text NOT NULL DEFAULT '',
    direction                text NOT NULL DEFAULT 'inbound' CHECK (direction IN ('inbound', 'outbound')),
    disposition              text NOT NULL CHECK (disposition IN ('answered', 'no-answer', 'voicemail', 'failed', 'in-progress', 'busy', 'blocked')),
    -- screened out by call protection
    filtered                 boolean NOT NULL DEFAULT false,
    emergency                boolean NOT NULL DEFAULT false,
    started_at               timestamptz NOT NULL,
    ended_at                 timestamptz,
    duration_seconds         integer NOT NULL DEFAULT 0 CHECK (duration_seconds >= 0),
    talk_seconds             integer NOT NULL DEFAULT 0 CHECK (talk_seconds >= 0),
    forward_seconds          integer NOT NULL DEFAULT 0 CHECK (forward_seconds >= 0),
    total_rated_amount_pence bigint NOT NULL DEFAULT 0,
    answered_by_staff        text,
    answered_department      text,
    answer_target_type       text,
    answer_target_label      text,
    created_at               timestamptz NOT NULL DEFAULT now()
);
-- Default list (business calls, newest first) and the period filters.
CREATE INDEX calls_account_activity_started ON calls (account_id, filtered, started_at DESC, id DESC);
CREATE INDEX calls_account_disposition_started ON calls (account_id, disposition, started_at DESC, id DESC);
CREATE INDEX calls_number_started ON calls (number_id, started_at DESC);
-- "part of the caller's or dialled number ... or of the caller's name"
CREATE INDEX calls_from_trgm ON calls USING gin (from_e164 gin_trgm_ops);
CREATE INDEX calls_to_trgm ON calls USING gin (to_e164 gin_trgm_ops);
CREATE INDEX calls_caller_name_trgm ON calls USING gin (lower(caller_name) gin_trgm_ops);

CREATE TABLE message_slips (
    id                     bigserial PRIMARY KEY,
    account_id             bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id              text NOT NULL UNIQUE,
    number_id              bigint REFERENCES numbers(id) ON DELETE SET NULL,
    call_id                bigint REFERENCES calls(id) ON DELETE SET NULL,
    from_e164              text NOT NULL,
    department             text NOT NULL DEFAULT '',
    caller_name            text NOT NULL DEFAULT '',
    received_at            timestamptz NOT NULL,
    heard_at               timestamptz,
    transcript_status      text NOT NULL DEFAULT 'pending',
    transcript_text        text,
    summary_status         text NOT NULL DEFAULT 'pending',
    sentiment              text CHECK (sentiment IN ('positive', 'neutral', 'negative')),
    urgency                text CHECK (urgency IN ('low', 'normal', 'high')),
    created_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX message_slips_account_received ON message_slips (account_id, received_at DESC, id DESC);

CREATE TABLE recordings (
    id               bigserial PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id        text NOT NULL UNIQUE,
    call_id          bigint REFERENCES calls(id) ON DELETE CASCADE,
    message_slip_id  bigint REFERENCES message_slips(id) ON DELETE CASCADE,
    kind             text NOT NULL CHECK (kind IN ('call', 'voicemail', 'slip_name', 'slip_message')),
    storage_key      text NOT NULL,
    content_type     text NOT NULL DEFAULT 'audio/wav',
    duration_seconds integer NOT NULL DEFAULT 0 CHECK (duration_seconds >= 0),
    size_bytes       bigint NOT NULL DEFAULT 0,
    deleted_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX recordings_call ON recordings (call_id);

ALTER TABLE message_slips
    ADD COLUMN name_recording_id bigint REFERENCES recordings(id) ON DELETE SET NULL,
    ADD COLUMN message_recording_id bigint REFERENCES recordings(id) ON DELETE SET NULL;

CREATE TABLE transcripts (
    id                  bigserial PRIMARY KEY,
    account_id          bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    recording_id        bigint NOT NULL UNIQUE REFERENCES recordings(id) ON DELETE CASCADE,
    call_id             bigint REFERENCES calls(id) ON DELETE CASCADE,
    status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
    summary_status      text NOT NULL DEFAULT 'pending' CHECK (summary_status IN ('pending', 'processing', 'completed', 'failed', 'unavailable')),
    text                text NOT NULL DEFAULT '',
    language            text NOT NULL DEFAULT '',
    minutes             integer NOT NULL DEFAULT 0,
    rated_amount_pence  bigint NOT NULL DEFAULT 0,
    summary             text,
    intent              text,
    sentiment           text CHECK (sentiment IN ('positive', 'neutral', 'negative')),
    urgency             text CHECK (urgency IN ('low', 'normal', 'high')),
    action_items        text[] NOT NULL DEFAULT '{}',
    callback_number     text,
    failure_reason      text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    completed_at        timestamptz
);
CREATE INDEX transcripts_call ON transcripts (call_id);
CREATE INDEX transcripts_account_sentiment ON transcripts (account_id, sentiment);
CREATE INDEX transcripts_account_urgency ON transcripts (account_id, urgency);

CREATE TABLE transcript_segments (
    transcript_id bigint NOT NULL REFERENCES transcripts(id) ON DELETE CASCADE,
    position      integer NOT NULL,
    start_seconds double precision NOT NULL,
    end_seconds   double precision NOT NULL,
    speaker       text NOT NULL DEFAULT '',
    text          text NOT NULL,
    PRIMARY KEY (transcript_id, position)
);

CREATE TABLE sms_conversations (
    id                   bigserial PRIMARY KEY,
    account_id           bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id            text NOT NULL UNIQUE,
    number_id            bigint NOT NULL REFERENCES numbers(id) ON DELETE CASCADE,
    counterparty_e164    text NOT NULL,
    last_message_at      timestamptz NOT NULL,
    last_message_preview text NOT NULL DEFAULT '',
    unread_count         integer NOT NULL DEFAULT 0 CHECK (unread_count >= 0),
    UNIQUE (number_id, counterparty_e164)
);
CREATE INDEX sms_conversations_account_recent ON sms_conversations (account_id, last_message_at DESC, id DESC);

CREATE TABLE sms_messages (
    id              bigserial PRIMARY KEY,
    account_id      bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    conversation_id bigint NOT NULL REFERENCES sms_conversations(id) ON DELETE CASCADE,
    public_id       text NOT NULL UNIQUE,
    direction       text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    from_e164       text NOT NULL,
    to_e164         text NOT NULL,
    body            text NOT NULL,
    status          text NOT NULL DEFAULT 'received',
    segments        integer NOT NULL DEFAULT 1,
    received_at     timestamptz NOT NULL
);
CREATE INDEX sms_messages_conversation ON sms_messages (conversation_id, received_at, id);

CREATE TABLE contacts (
    id                bigserial PRIMARY KEY,
    account_id        bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id         text NOT NULL UNIQUE,
    display_name      text NOT NULL,
    first_name        text,
    last_name         text,
    company           text,
    email             text,
    notes             text,
    source            text NOT NULL,
    external_id       text,
    external_url      text,
    source_created_at timestamptz,
    source_updated_at timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX contacts_source_external ON contacts (account_id, source, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX contacts_account_updated ON contacts (account_id, updated_at DESC, id DESC);
CREATE INDEX contacts_search_trgm ON contacts USING gin ((lower(display_name || ' ' || coalesce(company, '') || ' ' || coalesce(email, ''))) gin_trgm_ops);

CREATE TABLE contact_phones (
    id          bigserial PRIMARY KEY,
    contact_id  bigint NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    account_id  bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    position    integer NOT NULL,
    e164        text NOT NULL,
    raw_number  text NOT NULL,
    label       text NOT NULL DEFAULT '',
    is_primary  boolean NOT NULL DEFAULT false
);
CREATE INDEX contact_phones_account_e164 ON contact_phones (account_id, e164);
CREATE INDEX contact_phones_contact ON contact_phones (contact_id, position);

CREATE TABLE tasks (
    id              bigserial PRIMARY KEY,
    account_id      bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id       text NOT NULL UNIQUE,
    call_id         bigint REFERENCES calls(id) ON DELETE SET NULL,
    text            text NOT NULL,
    status          text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done')),
    callback_e164   text,
    sentiment       text,
    urgency         text,
    summary_snippet text,
    done_by_user_id bigint REFERENCES users(id) ON DELETE SET NULL,
    completed_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_account_status_created ON tasks (account_id, status, created_at DESC, id DESC);

CREATE TABLE notifications (
    id         uuid PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    type       text NOT NULL,
    title      text NOT NULL,
    body       text NOT NULL DEFAULT '',
    url        text NOT NULL DEFAULT '',
    read_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notifications_user_created ON notifications (user_id, created_at DESC, id);
CREATE INDEX notifications_user_unread ON notifications (user_id) WHERE read_at IS NULL;

CREATE TABLE job_requests (
    id              bigserial PRIMARY KEY,
    account_id      bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id       text NOT NULL UNIQUE,
    status          text NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'confirmed', 'done', 'declined')),
    number_id       bigint REFERENCES numbers(id) ON DELETE SET NULL,
    call_id         bigint REFERENCES calls(id) ON DELETE SET NULL,
    message_slip_id bigint REFERENCES message_slips(id) ON DELETE SET NULL,
    caller_name     text NOT NULL DEFAULT '',
    caller_e164     text NOT NULL DEFAULT '',
    contact_e164    text,
    job_type        text NOT NULL DEFAULT '',
    description     text NOT NULL DEFAULT '',
    address         text,
    postcode        text,
    preferred_when  text,
    preferred_date  date,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_requests_account_status_created ON job_requests (account_id, status, created_at DESC, id DESC);

CREATE TABLE blocked_callers (
    id         bigserial PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id  text NOT NULL UNIQUE,
    e164       text NOT NULL,
    action     text NOT NULL CHECK (action IN ('reject', 'voicemail')),
    label      text NOT NULL DEFAULT '',
    number_id  bigint REFERENCES numbers(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX blocked_callers_account_created ON blocked_callers (account_id, created_at DESC, id DESC);

CREATE TABLE ledger_entries (
    id                  bigserial PRIMARY KEY,
    account_id          bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    type                text NOT NULL CHECK (type IN ('charge', 'topup', 'refund', 'adjustment')),
    amount_pence        bigint NOT NULL,
    balance_after_pence bigint NOT NULL CHECK (balance_after_pence >= 0),
    note                text NOT NULL DEFAULT '',
    -- what caused it, e.g. a transcription charge's public_id, for refunds and audits
    reference           text,
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_account_created ON ledger_entries (account_id, created_at DESC, id DESC);

CREATE TABLE receipts (
    id           bigserial PRIMARY KEY,
    account_id   bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    number       text NOT NULL UNIQUE,
    kind         text NOT NULL CHECK (kind IN ('topup', 'subscription', 'bundle', 'addon')),
    description  text NOT NULL,
    amount_pence bigint NOT NULL CHECK (amount_pence >= 0),
    paid_at      timestamptz NOT NULL
);
CREATE INDEX receipts_account_paid ON receipts (account_id, paid_at DESC, id DESC);

-- Monthly plan allowance consumed by transcriptions; month is the first day in the account's time zone.
CREATE TABLE transcription_allowance_usage (
    account_id   bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    month        date NOT NULL,
    minutes_used integer NOT NULL DEFAULT 0 CHECK (minutes_used >= 0),
    PRIMARY KEY (account_id, month)
);

-- One charge per call: the unique call_id makes a repeated or concurrent request charge once.
CREATE TABLE transcription_charges (
    id                bigserial PRIMARY KEY,
    account_id        bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    public_id         text NOT NULL UNIQUE,
    call_id           bigint NOT NULL UNIQUE REFERENCES calls(id) ON DELETE CASCADE,
    recording_id      bigint NOT NULL REFERENCES recordings(id) ON DELETE CASCADE,
    minutes           integer NOT NULL CHECK (minutes >= 0),
    allowance_minutes integer NOT NULL DEFAULT 0,
    bundle_minutes    integer NOT NULL DEFAULT 0,
    amount_pence      bigint NOT NULL DEFAULT 0 CHECK (amount_pence >= 0),
    spend_day         date NOT NULL,
    status            text NOT NULL DEFAULT 'charged' CHECK (status IN ('charged', 'refunded')),
    automatic         boolean NOT NULL DEFAULT false,
    job_created_at    timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transcription_charges_spend ON transcription_charges (account_id, spend_day) WHERE status = 'charged';
CREATE INDEX transcription_charges_without_job ON transcription_charges (created_at) WHERE job_created_at IS NULL;

-- Outbox: an event is stored with the report that caused it, in the same transaction.
-- The body is kept as the exact bytes every attempt sends.
CREATE TABLE events (
    id            uuid PRIMARY KEY,
    account_id    bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    type          text NOT NULL,
    body          bytea NOT NULL,
    call_id       bigint REFERENCES calls(id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    dispatched_at timestamptz
);
CREATE INDEX events_undispatched ON events (created_at) WHERE dispatched_at IS NULL;
CREATE UNIQUE INDEX events_once_per_call ON events (call_id, type) WHERE call_id IS NOT NULL AND type IN ('call.ended', 'transcript.ready', 'voicemail.received');

-- Finished webhook deliveries (their resources leave etcd once written here).
CREATE TABLE webhook_deliveries (
    id                 bigserial PRIMARY KEY,
    account_id         bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    endpoint_public_id text NOT NULL,
    delivery_name      text NOT NULL UNIQUE,
    event_id           uuid NOT NULL,
    event_type         text NOT NULL,
    status             text NOT NULL,
    attempts           integer NOT NULL DEFAULT 0,
    response_code      integer,
    last_error         text,
    created_at         timestamptz NOT NULL,
    finished_at        timestamptz,
    next_attempt_at    timestamptz
);
CREATE INDEX webhook_deliveries_endpoint_created ON webhook_deliveries (account_id, endpoint_public_id, created_at DESC);

-- +goose Down
DROP SCHEMA public CASCADE;
CREATE SCHEMA public;
