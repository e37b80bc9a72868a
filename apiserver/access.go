package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/swaggest/jsonschema-go"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Access is what a route requires of the key: a permission, possibly an owner, possibly Integrations.
type Access struct {
	Permission        auth.Ability
	OwnerOnly         bool
	NeedsIntegrations bool
	// IntegrationsInService: the route's service applies the Integrations gate itself (so other
	// callers of the service get the same rule); NeedsIntegrations still documents it.
	IntegrationsInService bool
}

const (
	metaAccess         = "switchboard.access"
	attrPrincipal      = "switchboard.principal"
	securitySchemeName = "apiKey"
)

// protect declares a route's access rule, adds the filter that enforces it, and documents
// the error responses every protected route can give.
func protect(rb *restful.RouteBuilder, a Access) *restful.RouteBuilder {
	rb.Metadata(metaAccess, a).Filter(authorize).Filter(storableIDs).Filter(retryUnavailableRead).
		Returns(http.StatusUnauthorized, "The key is missing, wrong or revoked.", ErrorBody{}).
		Returns(http.StatusTooManyRequests, "Too many requests; see Retry-After.", ErrorBody{}).
		Returns(http.StatusServiceUnavailable, "A service behind the API (the database or kube-apiserver) is briefly unavailable; see Retry-After.", ErrorBody{})
	if a.NeedsIntegrations {
		// Two bodies, told apart by reason: a plain refusal or the add-on's.
		rb.Returns(http.StatusForbidden, "The key lacks a permission or the user's role does not allow it ({message}), "+
			"or the account lacks Integrations (an add-on refusal, told apart by its reason).", jsonschema.OneOf(ErrorBody{}, AddonRefusalBody{}))
	} else {
		rb.Returns(http.StatusForbidden, "The key lacks a permission or the user's role does not allow it.", ErrorBody{})
	}
	return rb
}

// authorize checks permission, role and the add-on gate, in that order.
func authorize(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
	a, _ := req.SelectedRoute().Metadata()[metaAccess].(Access)
	p := principal(req)
	if p == nil {
		writeError(resp, http.StatusUnauthorized, "Send a valid API key as: Authorization: Bearer <API_KEY>.")
		return
	}
	if a.Permission != "" && !p.Abilities.Has(a.Permission) {
		writeError(resp, http.StatusForbidden, "This key lacks the "+string(a.Permission)+" permission.")
		return
	}
	if a.OwnerOnly && p.User.Role != "owner" {
		writeError(resp, http.StatusForbidden, "Only an account owner's key can do this.")
		return
	}
	if a.NeedsIntegrations && !a.IntegrationsInService {
		if reason := integrationsRefusal(p); reason != "" {
			writeAddonRefusal(resp, reason)
			return
		}
	}
	chain.ProcessFilter(req, resp)
}

// integrationsRefusal is why the Integrations gate refuses p's account, or "" when it passes.
func integrationsRefusal(p *store.Principal) string {
	acct := p.Account
	return plans.IntegrationsGate(acct.Plan, acct.Addons, acct.Status, acct.IntegrationsDisabled)
}

// principal is the authenticated key of the request.
func principal(req *restful.Request) *store.Principal {
	p, _ := req.Attribute(attrPrincipal).(*store.Principal)
	return p
}
