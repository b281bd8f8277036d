package docker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"golang.org/x/term"

	"github.com/runbox/runbox/agent/remote"
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
func ensureImage(ctx context.Context, cli *client.Client, o Options) (imageInfo, error) {
	ref := o.Image
	ii, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		if perr := pull(ctx, cli, ref, o.Progress); perr != nil {
			return imageInfo{}, &ImageError{Image: ref, Err: perr}
		}
		ii, err = cli.ImageInspect(ctx, ref)
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

// pull pulls ref, rendering progress to out (Options.Progress).
func pull(ctx context.Context, cli *client.Client, ref string, out io.Writer) error {
	rc, err := cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
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

// find returns the task's container in persistent mode ("" if none).
func (s *sandbox) find(ctx context.Context) (string, error) {
	f := filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"),
		filters.Arg("label", LabelTask+"="+s.opts.Task),
		filters.Arg("label", LabelOwner+"="+s.opts.Owner),
		filters.Arg("label", LabelMode+"=persistent"),
	)
	list, err := s.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
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
func (s *sandbox) containerConfig() (*container.Config, *container.HostConfig) {
	o := s.opts
	dir := o.Dir
	if dir == "" && o.Workspace != "" {
		dir = "/workspace"
	}
	cfg := &container.Config{
		Image:      o.Image,
		Entrypoint: []string{"/bin/sh", "-c", keepalive},
		Cmd:        []string{},
		WorkingDir: dir,
		Labels:     s.labels,
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
		hc.Tmpfs[remote.DefaultAgentDir] = "rw,nosuid,nodev,exec,mode=0755,size=128m"
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
	switch {
	case o.Egress != nil:
		hc.NetworkMode = container.NetworkMode(o.Egress.Name)
		if ipv6Enabled() {
			// Link-local IPv6 would reach the host past the guard's
			// IPv4 rules.
			hc.Sysctls = map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
		}
	case o.Network != "":
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
	if s.agent != nil {
		hc.Mounts = append(hc.Mounts, s.agent.mount())
	}
	return cfg, hc
}

// create creates the task's container. When the engine fails the call, a
// container may exist all the same — ctx ended while the engine was still
// creating it — so it is looked up by its name and removed: a failed start
// leaks nothing. Where even that fails, the container is left in the
// "created" state with runbox's labels, and [Reap] removes it.
func (s *sandbox) create(ctx context.Context) (string, error) {
	cfg, hc := s.containerConfig()
	name := "runbox-" + sanitize(s.opts.Task)
	if !s.opts.Persistent {
		name += "-" + randomID()
	}
	resp, err := s.cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		// A conflict is another process's container of that name.
		if !cerrdefs.IsConflict(err) {
			s.discard(context.WithoutCancel(ctx), name, ctx.Err() != nil)
		}
		return "", fmt.Errorf("docker: create container from %s: %w", s.opts.Image, err)
	}
	return resp.ID, nil
}

// discardWait is how long discard watches for a container whose creation
// was cut short to appear, after the engine was left mid-request.
const discardWait = 3 * time.Second

// discard removes a container this sandbox created but could not start.
// cut says the create request was abandoned (ctx ended), so the engine
// may still be finishing it: discard then watches for it a little while.
func (s *sandbox) discard(ctx context.Context, ref string, cut bool) {
	ctx, cancel := context.WithTimeout(ctx, discardWait+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(discardWait)
	for {
		err := s.cli.ContainerRemove(ctx, ref, container.RemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			return
		case !cerrdefs.IsNotFound(err):
			s.log.Debug("docker: cannot remove a container that failed to start (Reap will)", "container", ref, "err", err)
			return
		case !cut || time.Now().After(deadline):
			return
		}
		select { // an engine still creating it has no event to wait on here
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// sanitize keeps a task id usable in a container name: the name itself
// when it is short and plain, else its first 40 usable characters and a
// hash of the whole (two long names with a common start, or "a b" and
// "a_b", must not name one container).
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
	if b.String() == s && len(s) <= 40 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return b.String()[:min(40, b.Len())] + "-" + hex.EncodeToString(sum[:5])
}

func (s *sandbox) stopContainer(ctx context.Context, id string) error {
	secs := int(s.opts.StopTimeout.Round(time.Second) / time.Second)
	if err := s.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: stop %s: %w", short(id), err)
	}
	return nil
}

// forceRemove kills and removes container id in one call.
func (s *sandbox) forceRemove(ctx context.Context, id string) error {
	if err := s.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove %s: %w", short(id), err)
	}
	return nil
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
		if now.Sub(time.Unix(c.Created, 0)) < age {
			continue // made too recently to have ended long enough ago: no inspect
		}
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
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
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
