package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"golang.org/x/term"

	"github.com/runbox/runbox/envs"
)

// Labels that mark runbox's containers.
const (
	LabelManaged = "io.runbox.managed" // "true" on every runbox container
	LabelOwner   = "io.runbox.owner"
	LabelTask    = "io.runbox.task"
	LabelMode    = "io.runbox.mode" // "persistent" or "ephemeral"
)

// keptCaps are the only Linux capabilities a container keeps; doc.go says
// why each is needed.
var keptCaps = [...]string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL"}

// keepalive is the container's main process: it only waits. docker-init
// (HostConfig.Init) is PID 1 and reaps the orphans of every command.
const keepalive = "while :; do sleep 3600; done"

var errContainerGone = errors.New("docker: container gone")

// ImageError is a missing image that could not be pulled.
type ImageError struct {
	Image string
	Err   error
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("docker: image %q is not present and could not be pulled: %v", e.Image, e.Err)
}

func (e *ImageError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, envs.ErrNotFound) true.
func (e *ImageError) Is(target error) bool { return target == envs.ErrNotFound }

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return fmt.Sprintf("uid-%d", os.Getuid())
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func labels(o Options) map[string]string {
	mode := "ephemeral"
	if o.Persistent {
		mode = "persistent"
	}
	return map[string]string{LabelManaged: "true", LabelOwner: o.Owner, LabelTask: o.Task, LabelMode: mode}
}

type imageInfo struct {
	os, arch   string
	workingDir string
	env        []string
}

// ensureImage inspects the image, pulling it when it is missing.
func (e *Env) ensureImage(ctx context.Context) (imageInfo, error) {
	ref := e.opts.Image
	ii, err := e.cli.ImageInspect(ctx, ref)
	if client.IsErrNotFound(err) {
		if perr := e.pull(ctx, ref); perr != nil {
			return imageInfo{}, &ImageError{Image: ref, Err: perr}
		}
		ii, err = e.cli.ImageInspect(ctx, ref)
	}
	if err != nil {
		return imageInfo{}, fmt.Errorf("docker: image %q: %w", ref, err)
	}
	info := imageInfo{os: ii.Os, arch: ii.Architecture}
	if ii.Config != nil {
		info.workingDir, info.env = ii.Config.WorkingDir, ii.Config.Env
	}
	return info, nil
}

// pull pulls ref, rendering progress to Options.Progress.
func (e *Env) pull(ctx context.Context, ref string) error {
	rc, err := e.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	out := e.opts.Progress
	if out == nil {
		out = io.Discard
	}
	tty := false
	if f, ok := out.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	dec := json.NewDecoder(rc)
	last := map[string]string{}
	for {
		var m struct {
			ID          string `json:"id"`
			Status      string `json:"status"`
			Progress    string `json:"progress"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			if tty {
				fmt.Fprintln(out)
			}
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		switch {
		case tty:
			fmt.Fprintf(out, "\r\x1b[K%s %s %s", m.ID, m.Status, m.Progress)
		case last[m.ID] != m.Status:
			last[m.ID] = m.Status
			fmt.Fprintf(out, "pull %s: %s %s\n", ref, m.ID, m.Status)
		}
	}
}

// setupLocked makes sure the container exists and runs, and connects to
// its agent (or prepares the exec fallback). Called with e.mu held.
func (e *Env) setupLocked(ctx context.Context) (backend, error) {
	again := e.id != ""
	e.dropBackendLocked()
	id := e.id
	if id != "" {
		if _, err := e.cli.ContainerInspect(ctx, id); client.IsErrNotFound(err) {
			id = ""
		} else if err != nil {
			return nil, fmt.Errorf("docker: inspect container %s: %w", short(id), err)
		}
	}
	if id == "" && e.opts.Persistent {
		found, err := e.find(ctx)
		if err != nil {
			return nil, err
		}
		id = found
	}
	if id == "" {
		var err error
		if id, err = e.create(ctx); err != nil {
			return nil, err
		}
	}
	e.id = id
	ci, err := e.cli.ContainerInspect(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("docker: inspect container %s: %w", short(id), err)
	}
	if ci.State == nil || !ci.State.Running || ci.State.Paused {
		if ci.State != nil && ci.State.Paused {
			err = e.cli.ContainerUnpause(ctx, id)
		} else {
			err = e.cli.ContainerStart(ctx, id, container.StartOptions{})
		}
		if err != nil {
			return nil, fmt.Errorf("docker: start container %s: %w", short(id), err)
		}
	}
	e.recreated = again
	be, err := e.connectLocked(ctx)
	if err != nil {
		return nil, err
	}
	e.be = be
	return be, nil
}

// find returns the task's container in persistent mode ("" if none).
func (e *Env) find(ctx context.Context) (string, error) {
	f := filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"),
		filters.Arg("label", LabelTask+"="+e.opts.Task),
		filters.Arg("label", LabelOwner+"="+e.opts.Owner),
		filters.Arg("label", LabelMode+"=persistent"),
	)
	list, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return "", fmt.Errorf("docker: list containers: %w", err)
	}
	for _, c := range list {
		if c.State == "removing" || c.State == "dead" {
			continue
		}
		return c.ID, nil
	}
	return "", nil
}

// containerConfig is the configuration of a new container. It holds no
// secret: commands' environments travel with each command.
func (e *Env) containerConfig() (*container.Config, *container.HostConfig) {
	o := e.opts
	dir := o.Dir
	if dir == "" && o.Workspace != "" {
		dir = "/workspace"
	}
	cfg := &container.Config{
		Image:      o.Image,
		Entrypoint: []string{"/bin/sh", "-c", keepalive},
		Cmd:        []string{},
		WorkingDir: dir,
		Labels:     e.labels,
	}
	init := true
	hc := &container.HostConfig{
		Init:           &init,
		CapDrop:        []string{"ALL"},
		CapAdd:         keptCaps[:],
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: o.ReadOnlyRoot,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,exec,mode=1777,size=512m"},
	}
	if o.ReadOnlyRoot {
		hc.Tmpfs[agentDir] = "rw,nosuid,nodev,exec,mode=0755,size=128m"
	}
	if o.PidsLimit > 0 {
		p := o.PidsLimit
		hc.Resources.PidsLimit = &p
	}
	if o.Limits.MemoryBytes > 0 {
		hc.Resources.Memory = o.Limits.MemoryBytes
		hc.Resources.MemorySwap = o.Limits.MemoryBytes // no swap beyond the limit
	}
	if o.Limits.CPUs > 0 {
		hc.Resources.NanoCPUs = int64(o.Limits.CPUs * 1e9)
	}
	if o.Network != "" {
		hc.NetworkMode = container.NetworkMode(o.Network)
	}
	for _, m := range o.Mounts {
		t := mount.TypeBind
		if m.Volume {
			t = mount.TypeVolume
		}
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: t, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	if o.Workspace != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: o.Workspace, Target: "/workspace"})
	}
	return cfg, hc
}

func (e *Env) create(ctx context.Context) (string, error) {
	cfg, hc := e.containerConfig()
	name := "runbox-" + sanitize(e.opts.Task)
	if !e.opts.Persistent {
		name += "-" + randomID()
	}
	resp, err := e.cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		return "", fmt.Errorf("docker: create container from %s: %w", e.opts.Image, err)
	}
	return resp.ID, nil
}

// sanitize keeps a task id usable in a container name.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() > 40 {
		return b.String()[:40]
	}
	return b.String()
}

func (e *Env) stopContainer(ctx context.Context, id string) error {
	secs := int(e.opts.StopTimeout.Round(time.Second) / time.Second)
	if err := e.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("docker: stop %s: %w", short(id), err)
	}
	return nil
}

func (e *Env) removeContainer(ctx context.Context, id string) error {
	err := e.stopContainer(ctx, id)
	if rerr := e.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !client.IsErrNotFound(rerr) {
		return errors.Join(err, fmt.Errorf("docker: remove %s: %w", short(id), rerr))
	}
	return nil
}

// describe says what became of a container, for error messages.
func (e *Env) describe(ctx context.Context, id string) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ci, err := e.cli.ContainerInspect(ctx, id)
	switch {
	case client.IsErrNotFound(err):
		return "is gone (removed)"
	case err != nil:
		return fmt.Sprintf("cannot be inspected (is the docker daemon up?): %v", err)
	case ci.State == nil:
		return "is in an unknown state"
	case ci.State.Running:
		return "is running but its agent died"
	}
	s := fmt.Sprintf("is %s (exit code %d)", ci.State.Status, ci.State.ExitCode)
	if ci.State.OOMKilled {
		s += ", killed for exceeding its memory limit"
	}
	return s
}

// Reap removes exited (or never started) runbox containers that finished
// longer than age ago, and returns their ids. Running containers are never
// touched.
func Reap(ctx context.Context, cli *client.Client, age time.Duration) ([]string, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"), filters.Arg("status", "exited"), filters.Arg("status", "created"), filters.Arg("status", "dead"))
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: reap: list: %w", err)
	}
	var removed []string
	var errs []error
	now := time.Now()
	for _, c := range list {
		ci, err := cli.ContainerInspect(ctx, c.ID)
		if err != nil || ci.State == nil || ci.State.Running {
			continue
		}
		ended, _ := time.Parse(time.RFC3339Nano, ci.State.FinishedAt)
		if ended.IsZero() || ended.Year() < 2000 {
			ended = time.Unix(c.Created, 0)
		}
		if now.Sub(ended) < age {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, c.ID)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("docker: reap: %w", err)
	}
	return removed, nil
}
