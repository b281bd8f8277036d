package launch_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
)

// The whole sequence of a contained launch: make the container, start
// the program held at its barrier, place it, let it run, and map how it
// ended.
func Example() {
	ctx := context.Background()
	limits := envs.Limits{} // with limits, NewContainer fails where they cannot apply
	cont, err := launch.NewContainer(ctx, fmt.Sprintf("example-%d", os.Getpid()), limits)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cont.Remove(ctx)

	gate, err := launch.NewBarrier()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gate.Close()
	sh, err := launch.Shell("")
	if err != nil {
		fmt.Println(err)
		return
	}
	argv := launch.HoldArgv(sh, []string{"sh", "-c", "echo placed first; exit 3"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = os.Stdout
	cmd.ExtraFiles = []*os.File{gate.File()} // fd launch.BarrierFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return
	}
	gate.Started()
	if err := gate.Admit(ctx, cont, cmd.Process.Pid, !limits.IsZero()); err != nil {
		fmt.Println("not contained:", err) // a warning here: no limits were asked for
	}
	cmd.Wait()
	st, _ := launch.Status(cmd.ProcessState)
	st = launch.LimitKilled(st, cont)
	fmt.Println("exit", st.Code)
	// Output:
	// placed first
	// exit 3
}
