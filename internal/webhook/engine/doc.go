// Package delivery is the webhook delivery engine: the outbox dispatcher and the parts the
// WebhookDelivery reconciler dispatches over, the way cluster-api keeps drain logic out of
// its reconcilers: each part a small type with its own tests.
//
//   - Engine, built once in internal/app, owns the parts below and makes every attempt
//     (Attempt) and writes every finished delivery (Finish), for the dispatcher and the
//     WebhookDelivery reconciler alike.
//   - Dispatcher claims outbox events and fans them out to deliveries, making first attempts
//     itself (FirstAttempts) and creating a WebhookDelivery only for what needs the controller.
//   - Backlog follows the live WebhookDeliveries and paces the dispatcher's claims.
//   - Plan decides, purely, what a delivery needs now: cancel, wait until a time, or attempt.
//   - Slots bounds attempts in flight to one endpoint and parks the deliveries that find its
//     slots taken (a released slot wakes the first of them).
//   - InFlight cancels the attempts in flight to an endpoint that is removed.
//   - Removed remembers deliveries the controller deleted, so a stale cached copy is ignored.
//   - HealthWriter writes an endpoint's health, coalesced.
//
// Writers of WebhookEndpoint status fields (one each):
//
//	phase, switchedOffAt, ownersNotifiedAt, conditions, observedGeneration
//	                                          WebhookEndpointReconciler
//	failingSince, lastDeliveryAt, lastResponseCode
//	                                          HealthWriter (from attempt outcomes); the one
//	                                          exception: setting a switched-off endpoint
//	                                          active again clears failingSince with the
//	                                          rest of its failure record, in the
//	                                          endpoint reconciler's status patch
package engine
