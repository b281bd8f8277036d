//go:build linux

package termination

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, in string
		want     stat
		bad      bool
	}{
		{"plain", "42 (sleep) S 1 42 42 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 21527 3133440 411", stat{pid: 42, state: 'S', ppid: 1, pgid: 42, start: 21527}, false},
		{"parens and spaces in comm", "7 (a) b) (c) Z 3 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", stat{pid: 7, state: 'Z', ppid: 3, pgid: 5, start: 99}, false},
		{"truncated", "7 (x) S 1 2", stat{}, true},
		{"no comm", "garbage", stat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(tt.want.pid, []byte(tt.in))
			if tt.bad {
				if err == nil {
					t.Fatalf("parseStat(%q) = %+v; want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStat(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

// A Proc whose start time does not match must never be signalled: this is
// what protects an unrelated process that inherited a recycled PID.
func TestProc_SignalRecycledRefused(t *testing.T) {
	s := startHelper(t, "sleep", nil)
	stale := Proc{PID: s.root.PID, StartTime: s.root.StartTime + 1}
	if stale.Alive() {
		t.Fatal("Alive() = true for a wrong start time")
	}
	if err := stale.Signal(syscall.SIGKILL); !errors.Is(err, ErrRecycled) {
		t.Fatalf("Signal with wrong start time = %v; want ErrRecycled", err)
	}
	if !s.root.Alive() {
		t.Fatal("the process behind the recycled PID was signalled")
	}
	if err := s.root.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal with the right start time = %v", err)
	}
	s.wait(t)
	if err := s.root.Signal(syscall.SIGKILL); !errors.Is(err, ErrGone) {
		t.Fatalf("Signal after exit and reap = %v; want ErrGone", err)
	}
}

// A zombie (exited, not yet reaped) is dead for teardown purposes.
func TestProc_ZombieIsDead(t *testing.T) {
	s := startHelper(t, "sleep", nil)
	// Wait for the exit without reaping, so the child stays a zombie.
	if err := s.root.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "zombie", func() bool {
		st, err := readStat(s.root.PID)
		return err != nil || st.dead()
	})
	if s.root.Alive() {
		t.Fatal("zombie reported alive")
	}
	if err := s.root.Signal(syscall.SIGTERM); !errors.Is(err, ErrGone) {
		t.Fatalf("Signal to zombie = %v; want ErrGone", err)
	}
}

func TestIdentify_Gone(t *testing.T) {
	if _, err := Identify(1 << 30); !errors.Is(err, ErrGone) {
		t.Fatalf("Identify(huge) = %v; want ErrGone", err)
	}
	me, err := Identify(os.Getpid())
	if err != nil || !me.Alive() {
		t.Fatalf("Identify(self) = %v, %v; want alive", me, err)
	}
}

func TestDescendants(t *testing.T) {
	s := startHelper(t, "reaper", nil)
	ds, err := Descendants(s.root.PID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range s.others {
		found := false
		for _, d := range ds {
			found = found || d == want
		}
		if !found {
			t.Errorf("Descendants(%d) = %v; missing %v", s.root.PID, ds, want)
		}
	}
}
