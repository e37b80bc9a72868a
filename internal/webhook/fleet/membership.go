package fleet

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// Heartbeats is where members announce themselves: PostgreSQL (store.Store).
type Heartbeats interface {
	BeatDeliveryMember(ctx context.Context, id string, now time.Time, forget time.Duration) ([]store.DeliveryMember, error)
	LeaveDeliveryMember(ctx context.Context, id string) error
}

// Defaults of Membership.
const (
	DefaultHeartbeatInterval = 2 * time.Second
	DefaultMemberTTL         = 10 * time.Second
)

// Membership is this replica's place in the delivery fleet: it writes a heartbeat every
// Interval, keeps the live members it read back, and answers what share of an endpoint's
// slots this replica holds now. It runs on every replica (not only the leader).
type Membership struct {
	Store Heartbeats
	Clock clock.WithTicker
	// ID names this replica's row; default the host name and a random suffix.
	ID string
	// Interval is how often the replica beats; TTL how long a member counts as live after
	// its last beat (the longest a dead replica's slots stay unused).
	Interval, TTL time.Duration
	// AttemptTimeout is the longest an attempt stays in flight (the sender's timeout): a
	// replica that joins a running fleet waits Interval+AttemptTimeout before its first
	// attempt, so that the others have seen it and their attempts in the slots it takes
	// from them are over.
	AttemptTimeout time.Duration
	// Drained, when set, is closed once this replica's attempts are over after it stopped
	// claiming; a stopping replica beats until then, so the others do not take the slots of
	// attempts still in flight.
	Drained <-chan struct{}
	Log     logr.Logger

	mu       sync.Mutex
	joinedAt time.Time
	lastBeat time.Time
	settle   time.Duration
	live     []Member
}

func (m *Membership) defaults() {
	if m.Clock == nil {
		m.Clock = clock.RealClock{}
	}
	if m.ID == "" {
		host, _ := os.Hostname()
		m.ID = host + "_" + uuid.NewString()
	}
	if m.Interval <= 0 {
		m.Interval = DefaultHeartbeatInterval
	}
	if m.TTL <= 0 {
		m.TTL = DefaultMemberTTL
	}
}

// NeedLeaderElection: every replica is a member.
func (m *Membership) NeedLeaderElection() bool { return false }

// Start beats until ctx ends and the replica's attempts are over (Drained), then deletes
// its row so the others take its slots at once.
func (m *Membership) Start(ctx context.Context) error {
	m.mu.Lock()
	m.defaults()
	m.mu.Unlock()
	ticker := m.Clock.NewTicker(m.Interval)
	defer ticker.Stop()
	for {
		m.Beat(ctx)
		select {
		case <-ctx.Done():
			m.beatUntilDrained(context.WithoutCancel(ctx), ticker)
			leaveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := m.Store.LeaveDeliveryMember(leaveCtx, m.ID); err != nil {
				m.Log.Error(err, "leave the delivery fleet (the others take this replica's slots after the member TTL)")
			}
			return nil
		case <-ticker.C():
		}
	}
}

// beatUntilDrained goes on beating until Drained is closed.
func (m *Membership) beatUntilDrained(ctx context.Context, ticker clock.Ticker) {
	if m.Drained == nil {
		return
	}
	for {
		select {
		case <-m.Drained:
			return
		case <-ticker.C():
			m.Beat(ctx)
		}
	}
}

// Beat writes one heartbeat and reads the members back. A failed beat changes nothing:
// past TTL without one, Standing stops this replica's claims.
func (m *Membership) Beat(ctx context.Context) {
	m.mu.Lock()
	m.defaults()
	m.mu.Unlock()
	now := m.Clock.Now()
	beatCtx, cancel := context.WithTimeout(ctx, m.Interval)
	defer cancel()
	rows, err := m.Store.BeatDeliveryMember(beatCtx, m.ID, now, 3*m.TTL)
	if err != nil {
		if ctx.Err() == nil {
			m.Log.Error(err, "delivery fleet heartbeat")
		}
		return
	}
	members := make([]Member, 0, len(rows))
	for _, r := range rows {
		members = append(members, Member{ID: r.ID, JoinedAt: r.JoinedAt, HeartbeatAt: r.HeartbeatAt})
	}
	live := Live(members, now, m.TTL)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.joinedAt.IsZero() {
		m.joinedAt = now
		if len(live) > 1 {
			// Others are delivering: wait until they have shrunk to their new shares.
			m.settle = m.Interval + m.AttemptTimeout
		}
		m.Log.Info("joined the delivery fleet", "member", m.ID, "members", len(live), "settle", m.settle)
	}
	if len(live) != len(m.live) {
		m.Log.Info("delivery fleet changed", "members", len(live))
	}
	m.lastBeat, m.live = now, live
}

// Standing says whether this replica may claim events and start first attempts now.
func (m *Membership) Standing() Standing {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.defaults()
	return Decide(m.joinedAt, m.lastBeat, m.Clock.Now(), m.TTL, m.settle)
}

// Share is this replica's share of endpoint's perEndpoint slots now: 0 while it may not
// claim (Standing), else its part of the split among the live members.
func (m *Membership) Share(endpoint string, perEndpoint int) int {
	if !m.Standing().Claim {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return Share(endpoint, m.ID, m.live, perEndpoint)
}

// Members are the live members at the last heartbeat.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Member(nil), m.live...)
}
