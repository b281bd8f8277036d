//go:build linux

package termination

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv marks a run of the test binary as a helper process; its value
// names the helper.
const helperEnv = "RUNBOX_TERMINATION_HELPER"

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		os.Exit(runHelper(name, os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// helpers are the processes the tests tear down. Each prints the PIDs it
// wants the test to know about, one per line, then "ready".
var helpers = map[string]func(args []string) int{
	// sleep: block until killed.
	"sleep": func([]string) int { ready(); return block() },
	// trap: ignore SIGTERM, block until SIGKILLed.
	"trap": func([]string) int { signal.Ignore(syscall.SIGTERM); ready(); return block() },
	// setsid: start a child in its own session (a trap), report it, block.
	"setsid": func([]string) int {
		c := child("trap", &syscall.SysProcAttr{Setsid: true})
		fmt.Println(c)
		ready()
		return block()
	},
	// daemon: start a setsid child (which forks a trap grandchild and
	// exits), report the grandchild, wait until it is orphaned, block.
	"daemon": func([]string) int {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), helperEnv+"=fork-exit")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, _ := c.Output() // returns when fork-exit exits
		fmt.Print(strings.TrimSuffix(string(out), "ready\n"))
		ready()
		return block()
	},
	// fork-exit: start a trap child, report it, exit at once.
	"fork-exit": func([]string) int {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), helperEnv+"=trap")
		c.Stdout = nil
		if err := c.Start(); err != nil {
			return 3
		}
		fmt.Println(c.Process.Pid)
		ready()
		return 0
	},
	// memhog: allocate and touch memory until killed (bounded at 4 GiB).
	"memhog": func([]string) int {
		ready()
		var keep [][]byte
		for range 4096 {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		runtime.KeepAlive(keep) // the memory stays in use until the limit kills it
		return 0
	},
	// nohup: like `nohup cmd &`: a child that ignores SIGHUP and SIGTERM
	// in the same group, while the parent exits on SIGTERM.
	"nohup": func([]string) int {
		c := child("trap", nil)
		fmt.Println(c)
		ready()
		return block()
	},
	// reaper: start two children; on SIGTERM forward it, reap them and
	// exit 7 by itself.
	"reaper": func([]string) int {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		var cs []*exec.Cmd
		for range 2 {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), helperEnv+"=sleep")
			if err := c.Start(); err != nil {
				return 3
			}
			fmt.Println(c.Process.Pid)
			cs = append(cs, c)
		}
		ready()
		<-term
		for _, c := range cs {
			c.Process.Signal(syscall.SIGTERM)
		}
		for _, c := range cs {
			c.Wait()
		}
		return 7
	},
}

func runHelper(name string, args []string) int {
	h, ok := helpers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
		return 2
	}
	return h(args)
}

func ready() { fmt.Println("ready") }

func block() int {
	for {
		time.Sleep(time.Hour) // a helper process idling until it is killed
	}
}

// child starts the helper name with attr, its output discarded, and returns its PID.
func child(name string, attr *syscall.SysProcAttr) int {
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), helperEnv+"="+name)
	c.SysProcAttr = attr
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	return c.Process.Pid
}

// started is a helper started by a test.
type started struct {
	cmd    *exec.Cmd
	root   Proc
	others []Proc // the PIDs the helper reported
	done   chan struct{}
	err    error // Wait's, valid after done
}

// startHelper starts helper name in its own process group (as local
// does), waits for its "ready" line and identifies it and the processes
// it reports. Cleanup SIGKILLs everything it knows that is still alive.
func startHelper(t *testing.T, name string, attr *syscall.SysProcAttr) *started {
	t.Helper()
	return start(t, spec{helper: name, attr: attr})
}

// spec says what start runs.
type spec struct {
	helper string   // helper name (TestMain dispatch); "" with argv
	argv   []string // run this instead of the test binary
	attr   *syscall.SysProcAttr
	c      Container // when set, the child is gated until Add is done
	noWait bool      // do not wait for "ready"
}

// start runs sp. With a container it starts the child as a shell that
// blocks reading fd 3 until the parent has called Container.Add, then
// execs the target: the contract local follows.
func start(t *testing.T, sp spec) *started {
	t.Helper()
	argv := sp.argv
	if argv == nil {
		argv = []string{os.Args[0]}
	}
	var c *exec.Cmd
	var gate *os.File
	if sp.c != nil {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		gate = w
		c = exec.Command("bash", append([]string{"-c", `read -r _ <&3; exec 3<&-; exec "$@"`, "gate"}, argv...)...)
		c.ExtraFiles = []*os.File{r}
	} else {
		c = exec.Command(argv[0], argv[1:]...)
	}
	c.Env = os.Environ()
	if sp.helper != "" {
		c.Env = append(c.Env, helperEnv+"="+sp.helper)
	}
	attr := sp.attr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Setpgid = true
	attr.Pdeathsig = syscall.SIGKILL
	c.SysProcAttr = attr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: c, done: make(chan struct{})}
	root, err := Identify(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	s.root = root
	if gate != nil {
		err := sp.c.Add(context.Background(), c.Process.Pid)
		gate.Write([]byte("go\n"))
		gate.Close()
		if err != nil {
			c.Process.Kill()
			c.Wait()
			t.Fatalf("Container.Add(%d): %v", c.Process.Pid, err)
		}
	}
	sc := bufio.NewScanner(out)
	for !sp.noWait && sc.Scan() && sc.Text() != "ready" {
		pid, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("helper %s printed %q", sp.helper, sc.Text())
		}
		p, err := Identify(pid)
		if err != nil {
			t.Fatalf("helper %s reported %d: %v", sp.helper, pid, err)
		}
		s.others = append(s.others, p)
	}
	go func() {
		for sc.Scan() {
		}
		s.err = c.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		for _, p := range s.all() {
			p.Signal(syscall.SIGKILL)
		}
		s.wait(t)
	})
	return s
}

func (s *started) all() []Proc { return append([]Proc{s.root}, s.others...) }

// wait waits (bounded) for the helper's Wait to return.
func (s *started) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-s.done:
		return s.err
	case <-time.After(10 * time.Second):
		t.Fatalf("helper %d did not exit", s.root.PID)
		return nil
	}
}

// assertGone fails unless none of ps is alive (checked in /proc).
func assertGone(t *testing.T, ps ...Proc) {
	t.Helper()
	for _, p := range ps {
		if p.Alive() {
			t.Errorf("process %v survived", p)
		}
	}
}
