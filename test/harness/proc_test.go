package harness

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProc: the output lands in <dir>/<name>.log, Stop ends the whole process group (a
// grandchild too), and an ended process reports itself with its log's tail.
func TestProc(t *testing.T) {
	dir := t.TempDir() + "/logs"
	p, err := StartProc(dir, "sh", "/bin/sh", "-c", "echo started; sleep 60 & echo child $!; wait")
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if err := Poll(context.Background(), 10*time.Second, "child started", func() error {
		b, _ := os.ReadFile(p.Log)
		_, after, ok := strings.Cut(string(b), "child ")
		if !ok || !strings.HasSuffix(after, "\n") {
			return os.ErrNotExist
		}
		child, err = strconv.Atoi(strings.TrimSpace(after))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Alive(); err != nil {
		t.Fatalf("running process reported ended: %v", err)
	}
	p.Stop(5 * time.Second)
	if done, _ := p.Exited(); !done {
		t.Fatal("Stop returned with the process running")
	}
	if err := p.Alive(); err == nil || !strings.Contains(err.Error(), "started") {
		t.Fatalf("ended process: %v, want an error with the log tail", err)
	}
	if err := Poll(context.Background(), 5*time.Second, "grandchild gone", func() error {
		if syscall.Kill(child, 0) == nil {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
			if !strings.Contains(string(b), ") Z ") { // a zombie awaiting its reaper is gone
				return os.ErrExist
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("the group stop left pid %d: %v", child, err)
	}
	var nilProc *Proc
	nilProc.Stop(time.Second) // a component that never started is left alone
}
