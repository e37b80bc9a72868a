package realtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// notification is a NOTIFY payload of migration 00017.
type notification struct {
	Account    int64           `json:"a"`
	Event      string          `json:"e"`
	Data       json.RawMessage `json:"d"`
	Ref        string          `json:"ref"`
	RevokeKey  int64           `json:"revoke_key"`
	RevokeUser int64           `json:"revoke_user"`
	// RecheckAccount: the account's status, plan, add-ons or Integrations switch changed.
	RecheckAccount int64 `json:"recheck_account"`
}

// listen LISTENs on its own connection until ctx ends, reconnecting after a lost connection.
// Events committed while it is disconnected are not replayed (clients catch up through the
// API); revocations and accounts losing the Integrations gate are, by checking every
// subscription's key and account again after each reconnect. The pause before a reconnect
// grows only while reconnecting fails: a connection that listened starts it again at a
// second, so the channel is not deaf for long after every later loss.
func (h *Hub) listen(ctx context.Context) {
	backoff := time.Second
	for ctx.Err() == nil {
		listened, err := h.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if listened {
			backoff = time.Second
		}
		h.cfg.Log.Error(err, "the realtime listener lost PostgreSQL; reconnecting", "after", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-h.cfg.Clock.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// listenOnce listens until the connection is lost; listened: it got as far as listening.
func (h *Hub) listenOnce(ctx context.Context) (listened bool, err error) {
	err = store.ListenRealtime(ctx, h.cfg.DatabaseURL, func() error {
		if err := h.recheck(ctx); err != nil {
			return err
		}
		listened = true
		h.listeningOnce.Do(func() { close(h.listening) })
		return nil
	}, func(payload []byte) { h.dispatch(ctx, payload) })
	return listened, err
}

// dispatch acts on one NOTIFY payload.
func (h *Hub) dispatch(ctx context.Context, payload []byte) {
	var n notification
	if err := json.Unmarshal(payload, &n); err != nil {
		h.cfg.Log.Error(err, "undecodable realtime notification")
		return
	}
	switch {
	case n.RevokeKey != 0:
		h.RevokeKey(n.RevokeKey)
	case n.RevokeUser != 0:
		h.RevokeUser(n.RevokeUser)
	case n.RecheckAccount != 0:
		if h.Subscribers(n.RecheckAccount) == 0 {
			return
		}
		if err := h.recheckAccounts(ctx, []int64{n.RecheckAccount}); err != nil {
			h.cfg.Log.Error(err, "check an account's live channel again", "account", n.RecheckAccount)
		}
	case n.Event == "" || n.Account == 0:
	case n.Ref != "":
		if h.Subscribers(n.Account) == 0 {
			return
		}
		body, err := h.cfg.Store.OutboxEventBody(ctx, n.Ref)
		if err != nil {
			h.cfg.Log.Error(err, "read a large realtime event", "event", n.Ref)
			return
		}
		h.Publish(n.Account, n.Event, body)
	default:
		h.Publish(n.Account, n.Event, n.Data)
	}
}
