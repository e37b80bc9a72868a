package apiserver_test

import (
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/apiserver"
)

// The served description names the serving server's per-user limit (serve
// --requests-per-minute); the published one, built without a server, names none.
func TestOpenAPIStatesTheConfiguredRateLimit(t *testing.T) {
	h := newHarness(t, func(c *apiserver.Config) { c.RequestsPerMinute = 75 })
	var doc struct {
		Info struct {
			Description string `json:"description"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Description string `json:"description"`
			} `json:"responses"`
		} `json:"paths"`
	}
	h.api.DoUnchecked(t, "", "GET", "/v1/openapi.json", nil).JSON(t, &doc)
	if !strings.Contains(doc.Info.Description, "on this server to 75;") {
		t.Errorf("info.description does not name the limit: %q", doc.Info.Description)
	}
	if d := doc.Paths["/contacts"]["get"].Responses["429"].Description; !strings.Contains(d, "on this server to 75;") {
		t.Errorf("GET /contacts 429 does not name the limit: %q", d)
	}
	published, err := apiserver.PublishedOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(published), "on this server") || !strings.Contains(string(published), "to a number the operator sets;") {
		t.Error("the published description names a limit per minute")
	}
}
