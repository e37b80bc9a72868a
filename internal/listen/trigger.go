package listen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// TriggerOptions configure Trigger.
type TriggerOptions struct {
	APIBase, Key string
	// Event is what to send; the API's test operation sends the spec's "test" event only.
	Event string
	// Endpoint is the webhook endpoint's public id.
	Endpoint   string
	Out        io.Writer
	HTTPClient *http.Client
}

// TestEvent is the event POST /v1/webhooks/{endpoint}/test sends.
const TestEvent = "test"

// Trigger asks the API to queue a test delivery to the endpoint (the real path: outbox,
// dispatcher, signed attempt) and prints the answer.
func Trigger(ctx context.Context, o TriggerOptions) error {
	if o.Event != TestEvent {
		return fmt.Errorf("the API sends one event on request, %q (POST /v1/webhooks/{endpoint}/test); %s come from real calls: "+
			"see them with switchboard listen", TestEvent, strings.Join(WebhookEvents(), ", "))
	}
	if o.Endpoint == "" {
		return fmt.Errorf("say which endpoint: --endpoint (its public id, from GET /v1/webhooks)")
	}
	api, err := newAPI(o.APIBase, o.Key, o.HTTPClient)
	if err != nil {
		return err
	}
	resp, err := api.TestWebhookWithResponse(ctx, o.Endpoint, nil)
	if err != nil {
		return fmt.Errorf("reach the API: %w", err)
	}
	if resp.JSON202 == nil {
		return apiError("POST /v1/webhooks/"+o.Endpoint+"/test", resp.HTTPResponse, resp.Body)
	}
	fmt.Fprintf(o.Out, "%d %s\n", resp.StatusCode(), strings.TrimSpace(string(resp.Body)))
	fmt.Fprintf(o.Out, "Queued a test delivery to %s: GET /v1/webhooks/%s/deliveries shows how it went\n", o.Endpoint, o.Endpoint)
	return nil
}
