package inherit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/runbox/runbox/internal/inherit"
)

const childEnv = "INHERIT_TEST_CHILD"

// TestCloseOnExec runs this test binary as a child that inherits a
// descriptor to a file without close-on-exec, as a harness's log would
// be: the child writes to it through a grandchild (the control), then
// calls CloseOnExec, still writes to it itself, and a grandchild no
// longer can.
func TestCloseOnExec(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		return
	}
	out := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=TestCloseOnExecChild", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.ExtraFiles = []*os.File{f} // fd 3, inheritable
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, res)
	}
	b, _ := os.ReadFile(out)
	if got, want := string(b), "before\nself\n"; got != want {
		t.Fatalf("the log holds %q, want %q (before: the control; self: the process itself; nothing from the grandchild after)\n%s", got, want, res)
	}
}

func TestCloseOnExecChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("run by TestCloseOnExec")
	}
	write := func(text string) {
		c := exec.Command("sh", "-c", "echo "+text+" >&3")
		if out, err := c.CombinedOutput(); err != nil && text == "before" {
			t.Fatalf("the control could not write: %v %s", err, out)
		}
	}
	write("before")
	if err := inherit.CloseOnExec(); err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.Write(3, []byte("self\n")); err != nil {
		t.Fatalf("the process itself lost its descriptor: %v", err)
	}
	write("after")
}
