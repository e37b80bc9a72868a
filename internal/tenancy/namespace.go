// Package tenancy maps accounts to the Kubernetes namespaces that hold their resources.
//
// Each account's WebhookEndpoints, WebhookDeliveries, TranscriptionJobs and signing Secrets
// live in a namespace of its own: RBAC and quotas can be set per account, and deleting the
// namespace removes everything the account had in the cluster.
package tenancy

import "strings"

// NamespacePrefix starts every account namespace.
const NamespacePrefix = "sb-"

// LabelAccount is set on account namespaces (and on the objects in them) to the account's public id.
const LabelAccount = "switchboard.dev/account"

// Namespace is the namespace of the account with the given public id, e.g. "acct_0a1b" → "sb-acct-0a1b".
// Public ids are lower-case base32 with one underscore, so the result is a valid DNS label.
func Namespace(accountPublicID string) string {
	return NamespacePrefix + strings.ReplaceAll(accountPublicID, "_", "-")
}

// AccountOf reverses Namespace; ok is false for namespaces that are not an account's.
func AccountOf(namespace string) (accountPublicID string, ok bool) {
	rest, found := strings.CutPrefix(namespace, NamespacePrefix)
	if !found || rest == "" {
		return "", false
	}
	head, tail, found := strings.Cut(rest, "-")
	if !found {
		return "", false
	}
	return head + "_" + tail, true
}
