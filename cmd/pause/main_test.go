package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// runAsPauseEnv makes the test binary behave as the pause binary, so the
// tests run the real main without a separate build.
const runAsPauseEnv = "SANDBOXIPAM_TEST_RUN_AS_PAUSE"

func TestMain(m *testing.M) {
	if os.Getenv(runAsPauseEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestExitsZeroOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			if code := runAndSignal(t, sig, nil); code != 0 {
				t.Errorf("exit code %d after %v, want 0", code, sig)
			}
		})
	}
}

// TestReapsOrphans runs pause as PID 1 of a new PID namespace, as in a
// pod, orphans a process inside it, and checks that no zombie is left.
func TestReapsOrphans(t *testing.T) {
	testenv.Require(t)
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	runAndSignalAfter(t, syscall.SIGTERM, attr, func(pid int) {
		// sh exits at once; its background sleep is reparented to pause.
		orphan := exec.Command("nsenter", "--target", strconv.Itoa(pid), "--pid", "--", "sh", "-c", "sleep 0.2 & exit 0")
		if out, err := orphan.CombinedOutput(); err != nil {
			t.Fatalf("orphan a process: %v: %s", err, out)
		}
		// The orphan exits after 0.2s; once no child of pause is left at
		// all, it was reaped. A zombie still counts as a child.
		testsupport.Wait(t, "pause to reap its orphan", func() (bool, string) {
			kids := children(pid)
			return len(kids) == 0, fmt.Sprintf("children %v, zombies %v", kids, zombieChildren(pid))
		})
	})
}

func runAndSignal(t *testing.T, sig syscall.Signal, attr *syscall.SysProcAttr) int {
	return runAndSignalAfter(t, sig, attr, func(int) {})
}

// runAndSignalAfter starts pause, runs between, signals it and returns its
// exit code. A signal that lands before pause subscribes to it kills the
// process by signal; that only shows the race of this test, so it retries.
func runAndSignalAfter(t *testing.T, sig syscall.Signal, attr *syscall.SysProcAttr, between func(pid int)) int {
	t.Helper()
	for attempt := 0; attempt < 6; attempt++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), runAsPauseEnv+"=1")
		cmd.SysProcAttr = attr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// No event says when pause has called signal.Notify: the Go runtime
		// catches every signal from the start (so /proc's SigCgt cannot
		// tell), and pause prints nothing. So sleep, longer on each retry,
		// and retry a signal that landed too early (it kills by signal).
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		between(cmd.Process.Pid)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
			continue
		}
		return cmd.ProcessState.ExitCode()
	}
	t.Fatalf("pause never caught %v", sig)
	return -1
}

// children lists the processes whose parent is pid, zombies included.
func children(pid int) []string {
	tasks, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []string
	for _, path := range tasks {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, path)
		}
	}
	return kids
}

// zombieChildren lists the children of pid that are zombies.
func zombieChildren(pid int) []string {
	tasks, _ := filepath.Glob("/proc/[0-9]*/stat")
	var zombies []string
	for _, path := range tasks {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[0] == "Z" && fields[1] == strconv.Itoa(pid) {
			zombies = append(zombies, path)
		}
	}
	return zombies
}
