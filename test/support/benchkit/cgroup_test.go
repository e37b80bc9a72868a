/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package benchkit

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// A busy process in a group with a tenth of a core is throttled to about that.
func TestCPUCgroupHoldsAProcessToItsBudget(t *testing.T) {
	cg, err := NewCPUCgroup(fmt.Sprintf("switchboard-benchkit-test-%d", os.Getpid()), 0.1, 0)
	if err != nil {
		t.Skipf("cannot create a cgroup under %s: %v", CPUCgroupRoot, err)
	}
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = spin.Process.Kill()
		_ = spin.Wait()
		if err := cg.Remove(); err != nil {
			t.Error(err)
		}
	}()
	if err := cg.Add(spin.Process.Pid); err != nil {
		t.Fatal(err)
	}
	_, before, _ := procStat(spin.Process.Pid)
	time.Sleep(time.Second)
	_, after, _ := procStat(spin.Process.Pid)
	used := time.Duration(after-before) * (time.Second / 100)
	th, err := cg.Throttling()
	if err != nil {
		t.Fatal(err)
	}
	if th.Throttled == 0 || th.ThrottledTime == 0 {
		t.Errorf("never throttled: %+v", th)
	}
	// 0.1 s of CPU a second; a loaded machine may give it less, never more (a tick of slack).
	if used > 150*time.Millisecond {
		t.Errorf("used %v of CPU in a second, budget 100 ms", used)
	}
}
