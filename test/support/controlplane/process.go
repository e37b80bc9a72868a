package controlplane

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// APIServerPID finds this control plane's kube-apiserver process, for fault tests that freeze
// it (SIGSTOP) and let it run again (SIGCONT): the kube-apiserver that holds the listening
// socket of this control plane's port. Matching the command line alone is not enough: another
// control plane on the machine may have been given the same port number earlier.
func (e *Env) APIServerPID() (int, error) {
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return 0, fmt.Errorf("kube-apiserver's address %q has no port: %w", e.Config.Host, err)
	}
	sockets, err := listeningSockets(port)
	if err != nil {
		return 0, err
	}
	certDir := ""
	if e.env != nil && e.env.ControlPlane.APIServer != nil {
		certDir = e.env.ControlPlane.APIServer.CertDir
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if !strings.HasSuffix(args[0], "kube-apiserver") || certDir != "" && !slices.Contains(args, "--cert-dir="+certDir) {
			continue
		}
		if holdsAny(pid, sockets) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no kube-apiserver process listens on port %d", port)
}

// listeningSockets is the inode of every TCP socket listening on port, IPv4 and IPv6.
func listeningSockets(port int) (map[string]bool, error) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ... inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); ok && err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if len(inodes) == 0 {
		return nil, fmt.Errorf("nothing listens on port %d", port)
	}
	return inodes, nil
}

// holdsAny reports whether process pid has one of the sockets open.
func holdsAny(pid int, inodes map[string]bool) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true
		}
	}
	return false
}

// FreezeAPIServer stops kube-apiserver (SIGSTOP): it keeps its connections and answers
// nothing, as a hung or paused one. It returns once the process is stopped. The returned
// resume (SIGCONT) is safe to call twice.
func (e *Env) FreezeAPIServer() (resume func(), err error) {
	pid, err := e.APIServerPID()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, err
	}
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if state, err := processState(pid); err == nil && (state == "T" || state == "t") {
			return resume, nil
		} else if time.Now().After(deadline) {
			resume()
			return nil, fmt.Errorf("kube-apiserver (pid %d) is not stopped 5 s after SIGSTOP: state %q, %v", pid, state, err)
		}
	}
}

// processState is the state letter of /proc/<pid>/stat (R, S, D, T ...).
func processState(pid int) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", err
	}
	// pid (comm) state ...: comm may hold spaces and parentheses; the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", fmt.Errorf("unexpected %s", b)
	}
	_, rest, ok := strings.Cut(string(b[i:]), ") ")
	if !ok || rest == "" {
		return "", fmt.Errorf("unexpected %s", b)
	}
	return rest[:1], nil
}
