// Package pgcluster starts a throwaway PostgreSQL cluster in a temporary directory,
// listening on a free loopback port. Tests and `make run` use it so that nothing
// needs to be installed or configured by hand.
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/test/support/freeport"
)

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	dir     string
	dataDir string
	port    int
	bin     string
	cred    *syscall.Credential
	opts    string // server options, kept for StartServer (restart.go)
}

// Start runs initdb and starts the server. Stop removes everything it made.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "switchboard-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, dataDir: filepath.Join(dir, "data"), bin: bin}
	if err := c.dropRoot(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if c.port, err = freeport.Get(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := c.run(ctx, "initdb", "-D", c.dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8",
		"--locale=C", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c.opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "+
		"-c full_page_writes=off -c max_connections=300 -c shared_buffers=256MB", c.port, dir)
	if extra := os.Getenv("PGCLUSTER_OPTIONS"); extra != "" {
		// For measurement only, e.g. "-c shared_preload_libraries=pg_stat_statements" (docs/benchmarks.md).
		c.opts += " " + extra
	}
	if err := c.StartServer(ctx); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	return c, nil
}

// URL is the connection string of a database on the cluster.
func (c *Cluster) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, database)
}

// CreateDatabase makes a database, optionally as a copy of a template database.
func (c *Cluster) CreateDatabase(ctx context.Context, name, template string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	_, err = conn.Exec(ctx, stmt)
	return err
}

// DumpSchema returns pg_dump's plain schema of database: tables, indexes, functions and
// triggers with their bodies, without owners, privileges or the server's version banner.
func (c *Cluster) DumpSchema(ctx context.Context, database string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "pg_dump"), "--schema-only", "--no-owner", "--no-privileges",
		"--no-comments", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres", database)
	cmd.Dir = c.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("pg_dump: %w\n%s", err, stderr.Bytes())
	}
	return out, nil
}

// Stop shuts the server down immediately and deletes its files.
func (c *Cluster) Stop() error {
	err := c.run(context.Background(), "pg_ctl", "-D", c.dataDir, "-m", "immediate", "-w", "stop")
	return errors.Join(err, os.RemoveAll(c.dir))
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

// dropRoot arranges for the server to run as the unprivileged "postgres" user when we
// are root, because PostgreSQL refuses to run as root.
func (c *Cluster) dropRoot() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root needs a 'postgres' user to run PostgreSQL (hack/ensure-tools.sh creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return os.Chown(c.dir, uid, gid)
}

// binDir finds the PostgreSQL server binaries: PG_BINDIR, then PATH, then Debian's layout.
func binDir() (string, error) {
	if dir := os.Getenv("PG_BINDIR"); dir != "" {
		return dir, nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("PostgreSQL server binaries not found: run hack/ensure-tools.sh or set PG_BINDIR")
}

// Query runs one statement on database and returns its rows as text (measurement and
// diagnostics, e.g. pg_stat_statements; the product's queries live in internal/store).
func (c *Cluster) Query(ctx context.Context, database, sql string, args ...any) ([][]string, error) {
	conn, err := pgx.Connect(ctx, c.URL(database))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = fmt.Sprint(v)
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
