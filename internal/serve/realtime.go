package serve

import (
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/realtime"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// RealtimeOptions configure the live channel, served on the API's listener at /app/<key>.
type RealtimeOptions struct {
	// AppKey is the public app key clients connect with (GET /me realtime.key).
	AppKey string
	// Secret signs subscriptions (never logged); every replica must share it. Empty: the
	// live channel is off and GET /me says enabled: false.
	Secret []byte
	// PublicHost, PublicPort, PublicScheme (ws or wss) are where clients reach the socket
	// (behind a load balancer); empty ones come from the public base URL.
	PublicHost   string
	PublicPort   int
	PublicScheme string
	Limits       realtime.Limits
}

// setupRealtime adds the hub to the manager and returns the API resource (answering 404 when
// the channel is off).
func setupRealtime(mgr ctrl.Manager, st *store.Store, o Options) (func(*apiserver.Server) apiserver.Resource, error) {
	ro := o.Realtime
	if len(ro.Secret) == 0 {
		o.Log.Info("the live channel is off: no realtime secret is configured ($SWITCHBOARD_REALTIME_SECRET or --realtime-secret-file)")
		return apiserver.Realtime(apiserver.RealtimeConfig{}), nil
	}
	if len(ro.Secret) < 16 {
		return nil, errors.New("the realtime secret must be at least 16 bytes")
	}
	if ro.AppKey == "" {
		return nil, errors.New("the realtime app key is empty: set --realtime-app-key")
	}
	if ro.PublicScheme != "" && ro.PublicScheme != "ws" && ro.PublicScheme != "wss" {
		return nil, errors.New("--realtime-public-scheme must be ws or wss")
	}
	signer := realtime.Signer{Key: ro.AppKey, Secret: ro.Secret}
	hub := realtime.NewHub(realtime.Config{Signer: signer, Store: st, DatabaseURL: o.DatabaseURL, Clock: o.Clock,
		Log: o.Log.WithName("realtime"), Limits: ro.Limits})
	if err := mgr.Add(hub); err != nil {
		return nil, err
	}
	return apiserver.Realtime(apiserver.RealtimeConfig{Signer: signer, Sockets: hub, PublicHost: ro.PublicHost,
		PublicPort: ro.PublicPort, PublicScheme: ro.PublicScheme}), nil
}
