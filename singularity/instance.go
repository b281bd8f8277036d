package singularity

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Instance is a running instance as the program lists it.
type Instance struct {
	// Name is the instance's name (instance://Name).
	Name string `json:"instance"`
	// PID is its host process.
	PID int `json:"pid"`
	// Image is what it was started from.
	Image string `json:"img"`
}

// list returns the user's running instances; name "" lists all of them,
// otherwise only that one (none when it does not run).
func (p program) list(ctx context.Context, name string) ([]Instance, error) {
	args := []string{"instance", "list", "--json"}
	if name != "" {
		args = append(args, name)
	}
	out, err := p.output(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("singularity: list instances: %w", err)
	}
	var v struct {
		Instances []Instance `json:"instances"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("singularity: list instances: %w (output %.200q)", err, out)
	}
	return v.Instances, nil
}

// running returns instance name when it runs (its process alive).
func (p program) running(ctx context.Context, name string) (Instance, bool, error) {
	list, err := p.list(ctx, name)
	if err != nil {
		return Instance{}, false, err
	}
	for _, in := range list {
		if in.Name == name && processExists(in.PID) {
			return in, true, nil
		}
	}
	return Instance{}, false, nil
}

// processExists says whether pid names a process that has not finished
// (the program's own list may still show an instance whose process was
// killed, until it notices).
func processExists(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// startArgs is `instance start` for o's image as name.
func startArgs(o Options, name, agentHostDir, agentDir string, userns bool) []string {
	args := []string{"instance", "start", "--cleanenv"}
	switch o.Contain {
	case ContainAll:
		args = append(args, "--containall")
	case ContainDirs:
		args = append(args, "--contain")
	}
	if userns {
		args = append(args, "--userns")
	}
	if o.WritableTmpfs {
		args = append(args, "--writable-tmpfs")
	}
	if o.Network == "none" {
		args = append(args, "--net", "--network", "none")
	}
	args = append(args, "--bind", agentHostDir+":"+agentDir)
	if o.Workspace != "" {
		args = append(args, "--bind", o.Workspace+":/workspace")
	}
	for _, b := range o.Binds {
		args = append(args, "--bind", b)
	}
	return append(args, o.Image, name)
}

// start starts instance name (args from startArgs).
func (p program) start(ctx context.Context, args []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := p.output(ctx, args...); err != nil {
		return fmt.Errorf("singularity: start instance %s: %w", args[len(args)-1], err)
	}
	return nil
}

// stop stops instance name: SIGTERM to its processes, then, after
// timeout, SIGKILL. An instance that is not running is not an error.
func (p program) stop(ctx context.Context, name string, timeout time.Duration) error {
	secs := max(1, int(timeout/time.Second))
	_, err := p.output(ctx, "instance", "stop", "--timeout", strconv.Itoa(secs), name)
	if err == nil {
		return nil
	}
	if _, up, lerr := p.running(ctx, name); lerr == nil && !up {
		return nil // stopped meanwhile, or never ran
	}
	return fmt.Errorf("singularity: stop instance %s: %w", name, err)
}
