// Package realtime serves the live channel: the Pusher Channels protocol 7 over WebSocket, so
// stock Pusher clients (pusher-js, Laravel Echo, the Swift/Java/Go clients) configured from
// GET /me receive an account's events on its private channel "private-account.<public_id>".
// Events are announced by PostgreSQL NOTIFY from the transactions that write the data
// (migration 00017), so every replica's Hub hears every event once it commits.
package realtime

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ChannelPrefix starts every account channel's name; the account's public id follows.
const ChannelPrefix = "private-account."

// Close codes of the protocol (pusher.com/docs/channels/library_auth_reference/pusher-websockets-protocol).
const (
	CloseAppNotFound        = 4001 // no app with this key: do not reconnect
	CloseOverQuota          = 4004 // over the account's connection quota: do not reconnect
	ClosePathNotFound       = 4005
	CloseUnsupportedVersion = 4007
	CloseNoProtocol         = 4008
	CloseUnauthorized       = 4009 // the authorising key was revoked or its user left
	CloseOverCapacity       = 4100 // reconnect after a back-off (slow reader, server full)
	CloseReconnect          = 4200 // generic: reconnect now (server shutting down)
	ClosePongTimeout        = 4201 // no pong: reconnect now
	CloseRateLimited        = 4301 // too many messages from the client
)

// Error codes of pusher:error messages that do not close the connection.
const (
	ErrorCodeUnauthorized = 4009
	ErrorCodeRateLimited  = 4301
)

// Message is one protocol frame. Data is JSON text carried as a JSON string (the protocol
// encodes event data twice) on the way out; clients may send it as an object.
type Message struct {
	Event   string          `json:"event"`
	Channel string          `json:"channel,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// outgoing encodes a server message, data (any JSON value) as a string as pusher-js expects.
func outgoing(event, channel string, data []byte) []byte {
	s, _ := json.Marshal(string(data))
	b, _ := json.Marshal(Message{Event: event, Channel: channel, Data: s})
	return b
}

// errorMessage is a pusher:error; code 0 is sent as null.
func errorMessage(code int, message string) []byte {
	var c any
	if code != 0 {
		c = code
	}
	data, _ := json.Marshal(map[string]any{"code": c, "message": message})
	b, _ := json.Marshal(Message{Event: "pusher:error", Data: data})
	return b
}

// subscribeData is pusher:subscribe's data.
type subscribeData struct {
	Channel string `json:"channel"`
	Auth    string `json:"auth"`
}

// decodeData accepts data as an object or as a JSON string holding one (clients do both).
func decodeData(raw json.RawMessage, dst any) error {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		raw = json.RawMessage(s)
	}
	return json.Unmarshal(raw, dst)
}

var (
	socketIDPattern    = regexp.MustCompile(`^\d{1,20}\.\d{1,20}$`)
	channelNamePattern = regexp.MustCompile(`^[A-Za-z0-9_\-=@,.;]{1,164}$`)
)

// ValidSocketID reports whether id has the protocol's form "<digits>.<digits>".
func ValidSocketID(id string) bool { return socketIDPattern.MatchString(id) }

// ValidChannelName reports whether name is a channel name by the protocol's rules.
func ValidChannelName(name string) bool { return channelNamePattern.MatchString(name) }

// ChannelAccount is the account public id of an account channel's name, or "" for any other name.
func ChannelAccount(channel string) string {
	id, ok := strings.CutPrefix(channel, ChannelPrefix)
	if !ok || id == "" || strings.ContainsAny(id, ".") {
		return ""
	}
	return id
}

// AccountChannel is the name of the account's channel.
func AccountChannel(accountPublicID string) string { return ChannelPrefix + accountPublicID }

// newSocketID returns a random socket id in the protocol's form.
func newSocketID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return fmt.Sprintf("%d.%d", binary.BigEndian.Uint32(b[:4]), binary.BigEndian.Uint32(b[4:]))
}

// Signer makes and checks the auth strings of private channels: "<key>:<hex HMAC-SHA256 of
// socket_id:channel_name>", as every Pusher client and server library does.
type Signer struct {
	Key    string
	Secret []byte
}

// Sign returns the auth string for socketID on channel.
func (s Signer) Sign(socketID, channel string) string {
	return s.Key + ":" + hex.EncodeToString(s.mac(socketID, channel))
}

// Verify checks an auth string in constant time.
func (s Signer) Verify(socketID, channel, auth string) bool {
	key, sig, ok := strings.Cut(auth, ":")
	if !ok || key != s.Key {
		return false
	}
	got, err := hex.DecodeString(sig)
	return err == nil && hmac.Equal(got, s.mac(socketID, channel))
}

func (s Signer) mac(socketID, channel string) []byte {
	m := hmac.New(sha256.New, s.Secret)
	m.Write([]byte(socketID + ":" + channel))
	return m.Sum(nil)
}

// idleAction is what an idle connection needs: nothing, a server ping, or closing (4201).
type idleAction int

const (
	idleNone idleAction = iota
	idlePing
	idleClose
)

// decideIdle: after activityTimeout without a message from the client the server pings;
// pongTimeout after that ping without one, it closes the connection.
func decideIdle(lastHeard, pingSent, now time.Time, activityTimeout, pongTimeout time.Duration) idleAction {
	if !pingSent.IsZero() && pingSent.After(lastHeard) {
		if now.Sub(pingSent) >= pongTimeout {
			return idleClose
		}
		return idleNone
	}
	if now.Sub(lastHeard) >= activityTimeout {
		return idlePing
	}
	return idleNone
}

// checkProtocol decides whether a client's ?protocol= is served: 0 when it is, else the close code.
func checkProtocol(v string) (int, string) {
	switch v {
	case "":
		return CloseNoProtocol, "No protocol version given: connect with ?protocol=7."
	case "5", "6", "7":
		return 0, ""
	default:
		return CloseUnsupportedVersion, "Unsupported protocol version " + v + ": this server speaks 5 to 7."
	}
}
