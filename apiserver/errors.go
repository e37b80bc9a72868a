package apiserver

import (
	"net/http"
	"sort"
	"strconv"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/plans"
)

// ErrorBody is every error's JSON: a plain-language message.
type ErrorBody struct {
	Message string `json:"message" required:"true"`
	// A plain refusal has only a message, so it is told apart from the add-on refusal.
	_ struct{} `additionalProperties:"false"`
}

// ValidationErrorBody is the 422 shape: each invalid field maps to its messages.
type ValidationErrorBody struct {
	Message string              `json:"message" required:"true"`
	Errors  map[string][]string `json:"errors" required:"true"`
}

// AddonRefusalBody is the 403 shape of the Integrations add-on gate. On routes behind the
// gate a 403 is either this or a plain {message} (missing permission); the description says
// so with a oneOf that reason tells apart.
type AddonRefusalBody struct {
	Reason     string `json:"reason" required:"true" enum:"addon_required,plan_required,account_inactive,platform_disabled"`
	Capability string `json:"capability" required:"true" enum:"integrations"`
	Message    string `json:"message" required:"true"`
	PricingURL string `json:"pricing_url" required:"true" format:"uri"`
}

// writeJSON writes a JSON response with a status.
func writeJSON(resp *restful.Response, status int, body any) {
	resp.Header().Set("Cache-Control", "no-store")
	if err := resp.WriteHeaderAndJson(status, body, restful.MIME_JSON); err != nil {
		// The client went away; nothing more to do.
		return
	}
}

// writeError writes {message}.
func writeError(resp *restful.Response, status int, message string) {
	writeJSON(resp, status, ErrorBody{Message: message})
}

// notFound is the one 404 for unknown ids, other accounts' ids and unknown paths.
func notFound(resp *restful.Response, what string) {
	writeError(resp, http.StatusNotFound, "No such "+what+" on this account.")
}

// fieldErrors collects invalid input by field name.
type fieldErrors map[string][]string

func (fe fieldErrors) add(field, message string) { fe[field] = append(fe[field], message) }

func (fe fieldErrors) any() bool { return len(fe) > 0 }

// writeValidation writes the 422 body; the message names the first problem for people.
func writeValidation(resp *restful.Response, fe fieldErrors) {
	fields := make([]string, 0, len(fe))
	for f := range fe {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	msg := fe[fields[0]][0]
	if n := len(fields) - 1; n > 0 {
		msg += " (and " + plural(n, "more error") + ")"
	}
	writeJSON(resp, http.StatusUnprocessableEntity, ValidationErrorBody{Message: msg, Errors: fe})
}

func plural(n int, word string) string {
	s := strconv.Itoa(n) + " " + word
	if n != 1 {
		s += "s"
	}
	return s
}

func writeAddonRefusal(resp *restful.Response, reason string) {
	writeJSON(resp, http.StatusForbidden, AddonRefusalBody{
		Reason: reason, Capability: plans.AddonIntegrations, Message: plans.RefusalMessages[reason], PricingURL: plans.PricingURL,
	})
}
