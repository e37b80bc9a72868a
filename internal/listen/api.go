package listen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/api/client"
)

// APIError is an answer of the API other than the one expected: its status and message.
type APIError struct {
	Operation string
	Status    int
	Message   string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: the API answered %d: %s", e.Operation, e.Status, e.Message)
}

// Refused reports whether the key itself is refused (missing, revoked, lacking a permission,
// or the account lacks Integrations): trying again will not help.
func (e *APIError) Refused() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusPaymentRequired || e.Status == http.StatusForbidden
}

// apiError reads the message of an error answer ({message} for every error of the API).
func apiError(op string, resp *http.Response, body []byte) *APIError {
	var b struct {
		Message string `json:"message"`
	}
	msg := http.StatusText(resp.StatusCode)
	if json.Unmarshal(body, &b) == nil && b.Message != "" {
		msg = b.Message
	}
	return &APIError{Operation: op, Status: resp.StatusCode, Message: msg}
}

// newAPI is the typed client of the API at base (with or without the /v1 root).
func newAPI(base, key string, hc *http.Client) (*client.API, error) {
	if base == "" {
		return nil, fmt.Errorf("say where the API is: --api-base (e.g. https://api.switchboard.example/v1)")
	}
	if key == "" {
		return nil, fmt.Errorf("give an API key: --key or $SWITCHBOARD_API_KEY")
	}
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return client.New(base, key, client.Options{HTTPClient: hc, IdempotencyKey: uuid.NewString})
}
