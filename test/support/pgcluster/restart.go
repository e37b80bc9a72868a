package pgcluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StopServer shuts the server down the way an operator's restart does ("fast": open sessions
// are ended with 57P01, everything committed is written out), keeping its files and port.
func (c *Cluster) StopServer() error {
	return c.run(context.Background(), "pg_ctl", "-D", c.dataDir, "-m", "fast", "-w", "stop")
}

// StartServer starts the server on its files and port (Start does the first time; after
// StopServer it is a restart).
func (c *Cluster) StartServer(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.dataDir, "-o", c.opts, "-l", filepath.Join(c.dir, "server.log"),
		"-w", "-t", "60", "start")
}

// ServerPID is the process id of the running server (the postmaster), from its pid file.
func (c *Cluster) ServerPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(first))
}
