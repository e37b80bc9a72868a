// Package freeport picks a free loopback TCP port for a process a test or benchmark starts
// (PostgreSQL, Redis, a listener of the service). The port is free when picked; the process
// that binds it later may lose a race with another, which is why callers start it at once.
package freeport

import "net"

// Get returns a TCP port free on 127.0.0.1 at the time of the call.
func Get() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
