package kernel_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kernel"
	"github.com/runbox/runbox/service"
)

func TestMain(m *testing.M) {
	if os.Getenv("RUNBOX_KERNEL_TEST_HOST") == "1" {
		os.Exit(kernelHost())
	}
	code := m.Run()
	if agent.dir != "" {
		os.RemoveAll(agent.dir)
	}
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutine leak:", err)
		code = 1
	}
	os.Exit(code)
}

// unconfined is cfg with the sandbox off, chosen: the kernel's own
// behaviour is tested here; cells under the sandbox run through the
// binary (cmd/runbox's code tests).
func unconfined(cfg config.Config) config.Config {
	cfg.Sandbox.Profile = "off"
	return cfg
}

// newSession is a gated local session with the default policy, reading
// nothing of the developer's own configuration.
func newSession(t *testing.T) *service.Session {
	t.Helper()
	svc, err := service.New(service.Options{Config: unconfined(config.Default()), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	ss, err := svc.NewSession(service.SessionOptions{Backend: "local", Spec: envs.Spec{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close(context.Background()) })
	return ss
}

func newKernel(t *testing.T, ss *service.Session, opts kernel.Options) *kernel.Kernel {
	t.Helper()
	k, err := ss.NewKernel(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	return k
}

// run executes one cell with a bound that only catches hangs.
func run(t *testing.T, k *kernel.Kernel, code string, timeout time.Duration) *kernel.Reply {
	t.Helper()
	// A bound that catches a hang, not a slow machine: a flooding cell
	// under the race detector on a busy machine has taken over a minute.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	r, err := k.Execute(ctx, code, kernel.ExecOptions{Timeout: timeout})
	if err != nil {
		t.Fatalf("Execute(%q): %v", code, err)
	}
	return r
}

func mustOK(t *testing.T, k *kernel.Kernel, code string) *kernel.Reply {
	t.Helper()
	r := run(t, k, code, 0)
	if r.Status != kernel.StatusOK {
		t.Fatalf("Execute(%q) = %s: %s%s%s", code, r.Status, r.Traceback, r.Stderr, r.Notice)
	}
	return r
}

func TestKernel_StatePersistsAcrossCells(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{})
	mustOK(t, k, "x = 41\ndef inc(v):\n    return v + 1")
	r := mustOK(t, k, "print(inc(x)); print(__name__)\ninc(x) * 2")
	if r.Stdout != "42\n__main__\n" {
		t.Errorf("stdout = %q; want 42 and __main__", r.Stdout)
	}
	if r.Result == nil || *r.Result != "84" {
		t.Errorf("result = %v; want 84 (the last expression)", r.Result)
	}
	if r.ExecutionCount != 2 {
		t.Errorf("execution_count = %d; want 2", r.ExecutionCount)
	}
}

// TestKernel_FdLevelOutputBelongsToTheCell: output written below Python
// (a subprocess, os.write) and output that imitates protocol frames are
// the cell's output and do not confuse the host.
func TestKernel_FdLevelOutputBelongsToTheCell(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{})
	fake := `{"op":"done","id":1,"status":"ok"}`
	r := mustOK(t, k, "import os, subprocess\n"+
		"os.write(1, b'fd-one\\n')\n"+
		"subprocess.run(['sh', '-c', 'echo from-sh; echo to-err >&2'])\n"+
		"print('"+fake+"')\n"+
		"os.write(2, b'"+fake+"\\n')\n"+
		"print('after')")
	for _, want := range []string{"fd-one\n", "from-sh\n", fake + "\n", "after\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout %q lacks %q", r.Stdout, want)
		}
	}
	if !strings.Contains(r.Stderr, "to-err\n") || !strings.Contains(r.Stderr, fake) {
		t.Errorf("stderr = %q; want to-err and the fake frame", r.Stderr)
	}
	r = mustOK(t, k, "print('next')")
	if r.Stdout != "next\n" {
		t.Errorf("the next cell printed %q; want next", r.Stdout)
	}
}

func TestKernel_OutputBounded(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{OutputLimit: 64 << 10, SpillDir: t.TempDir()})
	r := mustOK(t, k, "import sys\nsys.stdout.write('a' * (50 << 20))\nprint('END')")
	if !r.Truncated || len(r.Stdout) > 70<<10 {
		t.Fatalf("truncated=%v, len(stdout)=%d; want a window of about 64 KiB", r.Truncated, len(r.Stdout))
	}
	if !strings.HasSuffix(r.Stdout, "END\n") || !strings.Contains(r.Stdout, "output truncated") {
		t.Errorf("stdout tail = %q; want the truncation notice and END", r.Stdout[len(r.Stdout)-200:])
	}
	st, err := os.Stat(r.StdoutSpillPath)
	if err != nil || st.Size() != 50<<20+4 {
		t.Errorf("spill %s: %v, size %v; want the whole stream", r.StdoutSpillPath, err, st)
	}
}

func TestKernel_ExceptionKeepsTheKernel(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{})
	mustOK(t, k, "keep = 'kept'")
	r := run(t, k, "def f():\n    raise ValueError('boom')\nf()", 0)
	if r.Status != kernel.StatusError || r.EName != "ValueError" || r.EValue != "boom" {
		t.Fatalf("reply = %+v; want a ValueError boom", r)
	}
	if !strings.Contains(r.Traceback, "line 2, in f") || strings.Contains(r.Traceback, "run_cell") {
		t.Errorf("traceback = %q; want the cell's frames only", r.Traceback)
	}
	if r := mustOK(t, k, "print(keep)"); r.Stdout != "kept\n" {
		t.Errorf("after the error: %q", r.Stdout)
	}
}

// TestKernel_InterruptBeforeTheCellStarts: an interrupt sent with its cell
// (a timeout that is up at once; a busy machine, where the driver reads
// both before the cell begins) stops the cell without the kernel: the
// cell does not run, the namespace survives. Before, the interrupt was
// dropped, the cell slept on, and the grace's end killed the kernel.
func TestKernel_InterruptBeforeTheCellStarts(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{InterruptGrace: 20 * time.Second})
	mustOK(t, k, "keep = 1")
	for range 10 {
		r := run(t, k, "import time\ntime.sleep(3600)", time.Nanosecond)
		if !r.TimedOut || !r.Interrupted || r.EName != "KeyboardInterrupt" || r.StateLost {
			t.Fatalf("reply = %+v; want an interrupted cell with its state", r)
		}
	}
	if r := mustOK(t, k, "keep"); r.Result == nil || *r.Result != "1" {
		t.Errorf("keep = %v; want 1 (the namespace kept)", r.Result)
	}
}

// TestKernel_TimeoutInterruptsAndKeepsState: a timeout interrupts a busy
// loop and a sleep; the namespace survives.
func TestKernel_TimeoutInterruptsAndKeepsState(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{})
	mustOK(t, k, "n = 0")
	for _, code := range []string{"while True:\n    n += 1", "import time\ntime.sleep(3600)"} {
		start := time.Now()
		r := run(t, k, code, 300*time.Millisecond)
		if !r.TimedOut || !r.Interrupted || r.Status != kernel.StatusError || r.EName != "KeyboardInterrupt" || r.StateLost {
			t.Fatalf("%q: reply = %+v; want an interrupted, timed-out cell with its state", code, r)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%q took %v", code, d)
		}
	}
	if r := mustOK(t, k, "n > 0"); r.Result == nil || *r.Result != "True" {
		t.Errorf("n > 0 = %v; want True (the loop's count kept)", r.Result)
	}
}

// TestKernel_StuckCellKillsTheKernel: a cell that swallows the interrupt
// is killed with its kernel and the processes it started; the reply says
// the state is lost and the next cell runs in a fresh kernel.
func TestKernel_StuckCellKillsTheKernel(t *testing.T) {
	ss := newSession(t)
	k := newKernel(t, ss, kernel.Options{InterruptGrace: 300 * time.Millisecond})
	mustOK(t, k, "lost = 1")
	r := mustOK(t, k, "import subprocess\np = subprocess.Popen(['sleep', '3600'])\np.pid")
	sleepPID := *r.Result
	r = run(t, k, "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass", 200*time.Millisecond)
	if !r.StateLost || !r.TimedOut || r.Status != kernel.StatusExit || r.Notice == "" {
		t.Fatalf("reply = %+v; want state lost after a timeout", r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + sleepPID); os.IsNotExist(err) {
			break
		}
		if b, _ := os.ReadFile("/proc/" + sleepPID + "/stat"); strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sleep %s the cell started outlived its kernel", sleepPID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r = run(t, k, "'lost' in globals()", 0)
	if !r.Restarted || r.Result == nil || *r.Result != "False" {
		t.Errorf("next reply = %+v; want a restarted kernel without the old names", r)
	}
}

func TestKernel_ToolCallRunsThroughTheGate(t *testing.T) {
	ss := newSession(t)
	k := newKernel(t, ss, kernel.Options{})
	r := mustOK(t, k, "import runbox\nres = runbox.terminal('cd /tmp && pwd')\nprint(res['output'].strip(), res['exit_code'])")
	if r.Stdout != "/tmp 0\n" {
		t.Errorf("stdout = %q; want /tmp 0", r.Stdout)
	}
	// Fifty calls, one summary.
	r = mustOK(t, k, "ok = sum(runbox.terminal('echo %d' % i)['output'].strip() == str(i) for i in range(50))\nok")
	if r.Result == nil || *r.Result != "50" {
		t.Errorf("50 calls: result %v; want 50", r.Result)
	}
}

func TestKernel_HardlineToolCallRefused(t *testing.T) {
	ss := newSession(t)
	k := newKernel(t, ss, kernel.Options{})
	r := mustOK(t, k, "import runbox\ntry:\n    runbox.terminal('rm -rf --no-preserve-root /')\n    print('ran')\n"+
		"except runbox.Denied as e:\n    print('denied', e.kind, e.data['hardline'])")
	if r.Stdout != "denied denied True\n" {
		t.Errorf("stdout = %q; want the refusal as runbox.Denied", r.Stdout)
	}
	// Uncaught, it is the cell's error.
	r = run(t, k, "runbox.terminal('rm -rf /')", 0)
	if r.Status != kernel.StatusError || r.EName != "Denied" {
		t.Errorf("reply = %+v; want a Denied error", r)
	}
}

// TestKernel_ToolCallAfterTheCellRefused: a thread that calls a tool after
// its cell has finished is refused; nothing runs.
func TestKernel_ToolCallAfterTheCellRefused(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{})
	dir := t.TempDir()
	mustOK(t, k, "import runbox, threading, time\n"+
		"def late():\n    time.sleep(0.3)\n    try:\n        runbox.terminal('touch "+dir+"/ran')\n        r = 'ran'\n"+
		"    except runbox.ToolError as e:\n        r = e.kind\n"+
		"    open('"+dir+"/verdict', 'w').write(r)\n"+
		"threading.Thread(target=late).start()")
	deadline := time.Now().Add(30 * time.Second)
	var got []byte
	for {
		var err error
		if got, err = os.ReadFile(dir + "/verdict"); err == nil && len(got) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the late call never returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if string(got) != "cell_finished" {
		t.Errorf("late call: %q; want cell_finished", got)
	}
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Error("the late command ran")
	}
}

func TestKernel_RestartClearsState(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{})
	mustOK(t, k, "y = 1")
	pid := k.PID()
	if err := k.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if k.PID() == pid {
		t.Errorf("pid %d unchanged by restart", pid)
	}
	if r := mustOK(t, k, "'y' in globals()"); r.Result == nil || *r.Result != "False" {
		t.Errorf("after restart: %v; want False", r.Result)
	}
}

func TestKernel_NoSecretsInTheEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "kernel-test-secret")
	t.Setenv("GITHUB_TOKEN", "kernel-test-token")
	k := newKernel(t, newSession(t), kernel.Options{})
	r := mustOK(t, k, "import os\nprint('\\n'.join('%s=%s' % kv for kv in os.environ.items()))")
	if strings.Contains(r.Stdout, "kernel-test-") {
		t.Errorf("the kernel's environment holds a secret:\n%s", r.Stdout)
	}
}

func TestKernel_MissingInterpreter(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{Python: "python3-not-there"})
	_, err := k.Execute(t.Context(), "1", kernel.ExecOptions{})
	if err == nil || !strings.Contains(err.Error(), "python3-not-there") {
		t.Fatalf("err = %v; want one naming the interpreter", err)
	}
	if !errorsIs(err, kernel.ErrNoInterpreter) {
		t.Errorf("err = %v; want ErrNoInterpreter", err)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// kernelHost plays a host process: it starts a kernel, prints its pid and
// waits to be killed.
func kernelHost() int {
	svc, err := service.New(service.Options{Config: unconfined(config.Default()), Getenv: func(string) string { return "" }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ss, err := svc.NewSession(service.SessionOptions{Backend: "local"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k, err := ss.NewKernel(context.Background(), kernel.Options{})
	if err == nil {
		err = k.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(k.PID())
	select {}
}

// TestKernel_ExitsWhenItsHostDies: a kernel whose host is SIGKILLed (no
// chance to clean up) exits by itself within seconds: it watches its
// stdin.
func TestKernel_ExitsWhenItsHostDies(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := exec.Command(exe, "-test.run=^$")
	host.Env = append(os.Environ(), "RUNBOX_KERNEL_TEST_HOST=1")
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the host printed no pid: %v", err)
	}
	pid := strings.TrimSpace(line)
	if _, err := os.Stat("/proc/" + pid); err != nil {
		t.Fatalf("kernel pid %q: %v", pid, err)
	}
	host.Process.Signal(syscall.SIGKILL)
	host.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel %s outlived its host by 10s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKernel_TwoKernelsInParallel: kernels are independent; each keeps
// its own namespace while both run cells at once.
func TestKernel_TwoKernelsInParallel(t *testing.T) {
	ss := newSession(t)
	ks := []*kernel.Kernel{newKernel(t, ss, kernel.Options{}), newKernel(t, ss, kernel.Options{})}
	errs := make(chan string, 2)
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			for j := range 5 {
				code := fmt.Sprintf("v = %d\nimport runbox\nrunbox.terminal('echo %d-%d')['output'].strip() + '/' + str(v)", i, i, j)
				r, err := k.Execute(ctx, code, kernel.ExecOptions{})
				if want := fmt.Sprintf("'%d-%d/%d'", i, j, i); err != nil || r.Result == nil || *r.Result != want {
					errs <- fmt.Sprintf("kernel %d cell %d: %v %+v; want %s", i, j, err, r, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestSession_AuthorizeCodeOnTheHost: on the host, a cell is judged like
// python3 -c CODE: refused with nobody to ask unless it plainly only
// computes and prints, run with approval mode off.
func TestSession_AuthorizeCodeOnTheHost(t *testing.T) {
	if err := newSession(t).AuthorizeCode(t.Context(), "import shutil\nshutil.rmtree('x')"); !errors.Is(err, envs.ErrDenied) {
		t.Errorf("unattended on the host: %v; want ErrDenied", err)
	}
	// A cell that plainly only computes and prints is read and runs, as
	// python3 -c of it does.
	if err := newSession(t).AuthorizeCode(t.Context(), "print(6*7)"); err != nil {
		t.Errorf("a quiet cell unattended on the host: %v; want it run", err)
	}
	cfg := unconfined(config.Default())
	cfg.Approval.Mode = "off"
	svc, err := service.New(service.Options{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	ss, err := svc.NewSession(service.SessionOptions{Backend: "local"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close(context.Background()) })
	if err := ss.AuthorizeCode(t.Context(), "print(1)"); err != nil {
		t.Errorf("approval mode off: %v; want nil", err)
	}
}

// TestKernel_Exit: sys.exit ends the cell, not the kernel; os._exit ends
// the kernel, and the reply and the next one say the state is gone.
func TestKernel_Exit(t *testing.T) {
	k := newKernel(t, newSession(t), kernel.Options{})
	mustOK(t, k, "z = 1")
	r := run(t, k, "import sys\nsys.exit(2)", 0)
	if r.Status != kernel.StatusExit || r.ExitCode == nil || *r.ExitCode != 2 || r.StateLost {
		t.Fatalf("sys.exit(2): %+v; want status exit, code 2, state kept", r)
	}
	mustOK(t, k, "z")
	r = run(t, k, "import os\nprint('bye', flush=True)\nos._exit(3)", 0)
	if r.Status != kernel.StatusExit || !r.StateLost || r.ExitCode == nil || *r.ExitCode != 3 || r.Notice == "" {
		t.Fatalf("os._exit(3): %+v; want the kernel's exit 3 and its state lost", r)
	}
	r = run(t, k, "'z' in globals()", 0)
	if !r.Restarted || r.Result == nil || *r.Result != "False" {
		t.Errorf("next cell: %+v; want a restarted kernel", r)
	}
}
