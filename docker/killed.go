package docker

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/runbox/runbox/envs"
)

// KilledError is a container that was killed, stopped or removed from
// outside while a command ran in it — docker kill, docker stop, docker rm
// -f, the kernel's OOM killer, the engine stopping it — as the engine's
// record of the container says. The command that lost its container fails
// with an error that wraps it; the next command gets a new container.
// It matches [envs.ErrSandboxKilled].
type KilledError struct {
	// Container is the container's id (its first 12 characters).
	Container string
	// Removed is true when the container no longer exists (or is being
	// removed): docker rm -f. The fields below are then zero.
	Removed bool
	// Status is the engine's state of the container: "exited" or "dead".
	Status string
	// ExitCode is the exit code the engine recorded for the container's
	// main process: 137 after docker kill (SIGKILL), 143 after docker
	// stop (SIGTERM), 137 after an OOM kill.
	ExitCode int
	// Signal is the signal that ended the main process, read from
	// ExitCode (128+n); 0 when it exited by itself.
	Signal int
	// OOMKilled is true when the kernel killed the container for
	// exceeding its memory limit.
	OOMKilled bool
}

func (e *KilledError) Error() string {
	what := "docker: container " + e.Container
	switch {
	case e.Removed:
		return what + " was removed"
	case e.OOMKilled:
		return fmt.Sprintf("%s was OOM-killed: it exceeded its memory limit (exit code %d)", what, e.ExitCode)
	case e.Signal > 0:
		return fmt.Sprintf("%s was killed by signal %d (exit code %d)", what, e.Signal, e.ExitCode)
	}
	return fmt.Sprintf("%s stopped (%s, exit code %d)", what, e.Status, e.ExitCode)
}

// Is makes errors.Is(err, envs.ErrSandboxKilled) true.
func (e *KilledError) Is(target error) bool { return target == envs.ErrSandboxKilled }

// killedState is the KilledError of a container the engine no longer
// runs.
func killedState(id string, st *container.State) *KilledError {
	k := &KilledError{Container: short(id), Status: string(st.Status), ExitCode: st.ExitCode, OOMKilled: st.OOMKilled}
	if st.Status == container.StateRemoving {
		return &KilledError{Container: short(id), Removed: true}
	}
	if k.ExitCode > 128 && k.ExitCode < 128+65 {
		k.Signal = k.ExitCode - 128
	}
	return k
}

// settleWait bounds how long Explain waits for a container that still
// shows as running to stop. A kill breaks the agent's stream at once, but
// the engine records the container's exit a moment later: read at once,
// a killed container would look like a running one whose agent died.
const settleWait = 2 * time.Second

// Explain says what became of container id after a command lost it: a
// *KilledError when the engine no longer runs it, another error when it
// still runs (its agent died) or cannot be inspected.
func (s *sandbox) Explain(ctx context.Context, id string) error {
	ci, err := s.settled(ctx, id)
	switch {
	case cerrdefs.IsNotFound(err):
		return &KilledError{Container: short(id), Removed: true}
	case err != nil:
		return fmt.Errorf("docker: container %s cannot be inspected (is the docker daemon up?): %w", short(id), err)
	case ci.State == nil:
		return fmt.Errorf("docker: container %s is in an unknown state", short(id))
	case ci.State.Running:
		return fmt.Errorf("docker: container %s is running but its agent died", short(id))
	}
	return killedState(id, ci.State)
}

// settled inspects container id; one that shows as running is given up
// to settleWait to stop (the engine's wait API: an event, not a poll), and
// inspected again.
func (s *sandbox) settled(ctx context.Context, id string) (container.InspectResponse, error) {
	ci, err := s.cli.ContainerInspect(ctx, id)
	if err != nil || ci.State == nil || !ci.State.Running {
		return ci, err
	}
	wctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	done, failed := s.cli.ContainerWait(wctx, id, container.WaitConditionNotRunning)
	select { // one of them always arrives: wctx ends the wait with an error
	case <-done:
	case <-failed:
	}
	return s.cli.ContainerInspect(ctx, id)
}
