package cli

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/switchboard-dev/switchboard/internal/serve"
)

// addRealtimeFlags adds the live channel's flags to serve.
func addRealtimeFlags(f *pflag.FlagSet, o *serve.RealtimeOptions, secretFile *string) {
	f.StringVar(&o.AppKey, "realtime-app-key", "switchboard", "public app key of the live channel (GET /me realtime.key; clients connect to /app/<key>)")
	f.StringVar(secretFile, "realtime-secret-file", "", "file holding the secret (at least 16 bytes) that signs live channel subscriptions, shared by every replica (default $SWITCHBOARD_REALTIME_SECRET; none: the live channel is off)")
	f.StringVar(&o.PublicHost, "realtime-public-host", "", "host clients reach the live channel at (default the host of --public-base-url)")
	f.IntVar(&o.PublicPort, "realtime-public-port", 0, "port clients reach the live channel at (default the port of --public-base-url)")
	f.StringVar(&o.PublicScheme, "realtime-public-scheme", "", "ws or wss (default ws for an http base URL, wss for https)")
	f.IntVar(&o.Limits.ConnectionsPerAccount, "realtime-connections-per-account", 200, "subscribed live connections one account may hold on each replica")
	f.Float64Var(&o.Limits.MessagesPerSecond, "realtime-messages-per-second", 10, "messages a live connection may send a second (burst twice that) before it is closed with 4301")
	f.IntVar(&o.Limits.SubscriptionsPerMinute, "realtime-subscriptions-per-minute", 10, "subscription attempts a live connection may make a minute")
}

// realtimeSecret reads the live channel's secret from a file or the environment, never a flag value.
func realtimeSecret(file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read the realtime secret: %w", err)
		}
		return bytes.TrimSpace(b), nil
	}
	return []byte(os.Getenv("SWITCHBOARD_REALTIME_SECRET")), nil
}
