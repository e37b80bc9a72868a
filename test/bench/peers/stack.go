/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/freeport"
	"github.com/switchboard-dev/switchboard/test/support/pgcluster"
)

// stack is the throwaway processes a peer runs on: its PostgreSQL cluster and the processes
// started in the background (its dependencies and its own services), each with its output
// in dir/<name>.log and shown under its name in the benchmark's CPU accounting.
type stack struct {
	dir   string
	pg    *pgcluster.Cluster
	procs []*proc
}

// proc is a process of the stack; done is closed when it has ended.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it ended, once done is closed
}

func newStack(prefix string) (*stack, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	return &stack{dir: dir}, nil
}

// startPostgres starts the stack's PostgreSQL cluster with one database, db.
func (s *stack) startPostgres(ctx context.Context, db string) error {
	var err error
	if s.pg, err = pgcluster.Start(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := s.pg.CreateDatabase(ctx, db, ""); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// countPostgres counts the stack's PostgreSQL server among the benchmark's processes.
func (s *stack) countPostgres() error {
	pid, err := s.pg.ServerPID()
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	benchkit.CountPostmaster(pid)
	return nil
}

// startRedis starts a redis-server on a free loopback port, without persistence, and
// returns its port once it accepts connections.
func (s *stack) startRedis() (int, error) {
	port, err := freeport.Get()
	if err != nil {
		return 0, err
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return 0, fmt.Errorf("redis-server is not installed (hack/bench/peer.sh installs it): %w", err)
	}
	if _, err := s.start("redis", nil, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", s.dir); err != nil {
		return 0, err
	}
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", port), 30*time.Second); err != nil {
		return 0, fmt.Errorf("redis: %w\n%s", err, s.logTail("redis"))
	}
	return port, nil
}

// start runs a process in the background with env added to this process's environment.
func (s *stack) start(name string, env []string, bin string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(s.logPath(name))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, log, log
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	s.procs = append(s.procs, p)
	benchkit.NameProc(cmd.Process.Pid, name)
	go func() { p.err = cmd.Wait(); _ = log.Close(); close(p.done) }()
	return cmd, nil
}

// run runs a command to completion (at most timeout) and returns its standard output, or
// its standard output and error when it fails.
func (s *stack) run(ctx context.Context, timeout time.Duration, env []string, bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = s.dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

// stop ends every process, the last started first (services before what they depend on),
// then PostgreSQL, and removes the stack's files.
func (s *stack) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if s.pg != nil {
		_ = s.pg.Stop()
	}
	_ = os.RemoveAll(s.dir)
}

// exited names a process that has ended, if any.
func (s *stack) exited() string {
	for _, p := range s.procs {
		select {
		case <-p.done:
			if p.err != nil {
				return fmt.Sprintf("%s exited: %v", p.name, p.err)
			}
			return p.name + " exited"
		default:
		}
	}
	return ""
}

func (s *stack) logPath(name string) string {
	return filepath.Join(s.dir, strings.ReplaceAll(name, " ", "-")+".log")
}

func (s *stack) logTail(name string) string {
	b, _ := os.ReadFile(s.logPath(name))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func waitTCP(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newAPIClient is the HTTP client the harness talks to a peer's API with: kept-alive
// connections enough for the load generator's 32 clients.
func newAPIClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
}

// callJSON sends body as JSON to url with a bearer token and decodes a 2xx answer into out
// (nil: the answer is not read as JSON); another status is an error with the answer's body.
func callJSON(ctx context.Context, hc *http.Client, token, method, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: unexpected answer %s", method, url, raw)
	}
	return nil
}
