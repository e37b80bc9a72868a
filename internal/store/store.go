package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNotFound is returned when a record does not exist on the account asking for it.
var ErrNotFound = errors.New("not found")

// Store wraps the connection pool; query methods live in one file per domain.
type Store struct {
	pool *pgxpool.Pool

	// Webhook delivery statements batched across the delivery workers (webhooks.go).
	webhookOnce  sync.Once
	eventBatch   *batcher[eventLookup, eventFound]
	historyBatch *batcher[FinishedDelivery, struct{}]
	markBatch    *batcher[eventMark, struct{}]

	// How far back claims look in the outbox (outbox.go).
	claimFloor claimFloor
}

// Open connects to PostgreSQL.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	resetOnLoss := &poolResetTracer{}
	cfg.ConnConfig.Tracer = resetOnLoss
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	resetOnLoss.pool.Store(pool)
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return &Store{pool: pool}, nil
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that PostgreSQL answers (the readiness probe).
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// connConfig is the configuration of one connection to url. The URL is parsed as the pool
// parses it, so the pool's own parameters (pool_max_conns and the other pool_* ones, see
// Open) are accepted and not sent to the server as settings, which it would refuse.
func connConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	return cfg.ConnConfig, nil
}

// Migrate applies every embedded migration not yet applied and reports the versions it ran.
func Migrate(ctx context.Context, url string) ([]int64, error) {
	cfg, err := connConfig(url)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	provider, err := newMigrationProvider(db)
	if err != nil {
		return nil, err
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	versions := make([]int64, 0, len(results))
	for _, r := range results {
		versions = append(versions, r.Source.Version)
	}
	return versions, nil
}

// MigrateTo applies the embedded migrations up to and including version (a database of an
// earlier release, for tests of the migrations that follow).
func MigrateTo(ctx context.Context, url string, version int64) error {
	cfg, err := connConfig(url)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	provider, err := newMigrationProvider(db)
	if err != nil {
		return err
	}
	if _, err := provider.UpTo(ctx, version); err != nil {
		return fmt.Errorf("migrate to %d: %w", version, err)
	}
	return nil
}

func newMigrationProvider(db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	// Replicas that start together all migrate: a session advisory lock makes the others
	// wait for the first and then find nothing to do, instead of racing on the same DDL.
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker),
		goose.WithGoMigrations(partitionOutboxMigration, accountOutboxIndexMigration))
}

// isUniqueViolation reports whether err is a unique-constraint violation.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// notFound maps pgx.ErrNoRows to ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
