-- +goose Up
-- Transcription charges: one LIVE charge per call instead of one charge per call ever.
--
-- 00001 made transcription_charges.call_id unique, so a call whose transcription finally
-- failed (and was refunded) could never be transcribed again. A paying customer expects to
-- be able to try again: the charge that was refunded stays as the record of what happened,
-- and a new charge may be made. Two simultaneous requests for the same call still charge
-- once: only one row per call may be in status 'charged' (and the account row lock taken by
-- every charge serialises them before the index is reached).
ALTER TABLE transcription_charges DROP CONSTRAINT transcription_charges_call_id_key;
CREATE UNIQUE INDEX transcription_charges_one_live_per_call ON transcription_charges (call_id) WHERE status = 'charged';
CREATE INDEX transcription_charges_call ON transcription_charges (call_id);

-- +goose Down
DROP INDEX IF EXISTS transcription_charges_call;
DROP INDEX IF EXISTS transcription_charges_one_live_per_call;
ALTER TABLE transcription_charges ADD CONSTRAINT transcription_charges_call_id_key UNIQUE (call_id);
