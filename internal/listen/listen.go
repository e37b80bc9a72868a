// Package listen is `switchboard listen` and `switchboard trigger`: a developer's receiver on
// a laptop gets the account's webhook events without a public HTTPS address. listen
// subscribes to the account's live channel as any Pusher client does and posts each webhook
// event to a local URL as a real delivery would (same body, same headers, both signature
// schemes), signed with a secret stable for the key on this machine; trigger asks the API
// for the spec's test delivery to a real endpoint.
package listen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/api/client"
	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Options configure Listen.
type Options struct {
	// APIBase is the API's address, with or without the /v1 root.
	APIBase string
	// Key is the API key; it is sent to the API only, never printed.
	Key string
	// ForwardTo is the local receiver's URL.
	ForwardTo string
	// Events are the webhook events to forward; empty: all of them.
	Events []string
	// ConfigDir holds the machine's salt (default DefaultConfigDir).
	ConfigDir string
	// Out gets the start lines and one line per event.
	Out io.Writer
	// Clock times the attempts and the reconnect back-off; default the real clock.
	Clock clock.Clock
	// HTTPClient talks to the API; default a client with a 30 s timeout.
	HTTPClient *http.Client
	// MaxBackoff bounds the wait between reconnects (default 30 s).
	MaxBackoff time.Duration
}

// WebhookEvents are the events listen forwards: those a webhook endpoint can subscribe to.
// The live channel's other events (call.ringing, text.received, ...) are not webhooks.
func WebhookEvents() []string {
	out := make([]string, len(switchboardv1alpha1.SubscribableEvents))
	for i, e := range switchboardv1alpha1.SubscribableEvents {
		out[i] = string(e)
	}
	return out
}

// listener is one run of Listen.
type listener struct {
	o       Options
	api     *client.API
	sender  *send.Sender
	secret  string
	events  map[string]bool
	rt      client.MeRealtime
	wsURL   string
	printed bool // the first subscription was announced
}

// Listen runs until ctx ends (nil) or the API or the live channel refuses the key (the error
// says why, with the API's message).
func Listen(ctx context.Context, o Options) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if err := checkForwardTo(o.ForwardTo); err != nil {
		return err
	}
	l := &listener{o: o, events: map[string]bool{}}
	all := WebhookEvents()
	if len(o.Events) == 0 {
		o.Events = all
	}
	for _, e := range o.Events {
		if !slices.Contains(all, e) {
			return fmt.Errorf("--events: %q is not a webhook event; choose from %s", e, strings.Join(all, ", "))
		}
		l.events[e] = true
	}
	api, err := newAPI(o.APIBase, o.Key, o.HTTPClient)
	if err != nil {
		return err
	}
	l.api = api
	// listen shows what the account's webhooks carry, so it needs what managing them needs
	// (webhooks:manage, an owner's key); the API decides and says why not.
	hooks, err := api.ListWebhooksWithResponse(ctx)
	if err != nil {
		return fmt.Errorf("reach the API: %w", err)
	}
	if hooks.JSON200 == nil {
		return apiError("the key may not manage webhooks (GET /v1/webhooks)", hooks.HTTPResponse, hooks.Body)
	}
	me, err := api.GetMeWithResponse(ctx)
	if err != nil {
		return fmt.Errorf("reach the API: %w", err)
	}
	if me.JSON200 == nil {
		return apiError("GET /v1/me", me.HTTPResponse, me.Body)
	}
	l.rt = me.JSON200.Realtime
	if !l.rt.Enabled {
		return errors.New("the live channel is off on this service (GET /v1/me says realtime.enabled is false)")
	}
	l.wsURL = (&url.URL{Scheme: l.rt.Scheme, Host: net.JoinHostPort(l.rt.Host, strconv.Itoa(l.rt.Port)),
		Path: "/app/" + l.rt.Key, RawQuery: "protocol=7&client=switchboard-listen&version=1"}).String()
	if o.ConfigDir == "" {
		if o.ConfigDir, err = DefaultConfigDir(); err != nil {
			return fmt.Errorf("find the config directory for the signing secret: %w", err)
		}
	}
	if l.secret, err = LocalSecret(o.ConfigDir, o.Key); err != nil {
		return err
	}
	// The real sender, so requests are made as deliveries are (headers, no redirects, 10 s);
	// the local receiver is on a private address by design.
	l.sender = send.NewSender(send.SenderConfig{AllowPrivateTargets: true})
	names := make([]string, 0, len(l.events))
	for _, e := range all {
		if l.events[e] {
			names = append(names, e)
		}
	}
	fmt.Fprintf(o.Out, "Signing secret %s (the same for this key on this machine)\n", l.secret)
	fmt.Fprintf(o.Out, "Forwarding %s of %s to %s\n", strings.Join(names, ", "), me.JSON200.Tenant.Name, o.ForwardTo)
	return l.run(ctx)
}

func checkForwardTo(raw string) error {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--forward-to must be an http:// or https:// URL, e.g. http://localhost:3000/hooks")
	}
	return nil
}

// run keeps a subscription, reconnecting with a back-off after the connection is lost.
func (l *listener) run(ctx context.Context) error {
	backoff := time.Second
	for {
		subscribed, err := l.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if permanent(err) {
			return err
		}
		if subscribed {
			backoff = time.Second
		}
		fmt.Fprintf(l.o.Out, "Lost the live channel (%v); reconnecting in %s\n", err, backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-l.o.Clock.After(backoff):
		}
		backoff = min(backoff*2, l.o.MaxBackoff)
	}
}

// permanent: errors a reconnect cannot fix.
func permanent(err error) bool {
	var apiErr *APIError
	var refused *RefusedError
	var closed *ClosedError
	return (errors.As(err, &apiErr) && apiErr.Refused()) || errors.As(err, &refused) ||
		(errors.As(err, &closed) && closed.Permanent())
}

// session connects, subscribes and forwards events until the connection fails.
func (l *listener) session(ctx context.Context) (subscribed bool, err error) {
	c, err := dialPusher(ctx, l.wsURL)
	if err != nil {
		return false, err
	}
	defer c.close()
	sid, channel := c.socketID, l.rt.Channel
	auth, err := l.api.AuthorizeRealtimeWithResponse(ctx, client.RealtimeAuthRequest{SocketId: &sid, ChannelName: &channel})
	if err != nil {
		return false, err
	}
	if auth.JSON200 == nil {
		return false, apiError("subscribe to the live channel (POST /v1/realtime/auth)", auth.HTTPResponse, auth.Body)
	}
	if err := c.subscribe(ctx, channel, auth.JSON200.Auth); err != nil {
		return false, err
	}
	if l.printed {
		fmt.Fprintf(l.o.Out, "Reconnected to the live channel\n")
	} else {
		fmt.Fprintf(l.o.Out, "Ready: listening on %s (Ctrl-C to stop)\n", channel)
		l.printed = true
	}
	for {
		event, data, err := c.next(ctx, channel)
		if err != nil {
			return true, err
		}
		if l.events[event] {
			l.forward(ctx, event, data)
		}
	}
}

// forward posts one event's body to the local receiver as a delivery and prints a line.
func (l *listener) forward(ctx context.Context, event string, body []byte) {
	var head struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.ID == "" {
		fmt.Fprintf(l.o.Out, "%s  %s  (skipped: the live channel's data has no event id)\n", l.o.Clock.Now().Format(time.DateTime), event)
		return
	}
	start := l.o.Clock.Now()
	res := l.sender.Send(ctx, send.Request{URL: l.o.ForwardTo, Secret: l.secret, EventType: event, EventID: head.ID,
		Body: body, SentAt: start})
	took := l.o.Clock.Since(start).Round(time.Millisecond)
	outcome := strconv.Itoa(res.StatusCode)
	if res.StatusCode == 0 {
		outcome = "failed: " + res.Error
	}
	fmt.Fprintf(l.o.Out, "%s  %s  %s  -> %s in %s\n", start.Format(time.DateTime), event, head.ID, outcome, took)
}
