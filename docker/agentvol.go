package docker

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/agent/remote"
)

// LabelAgent marks the volumes that hold an agent build, with the build's
// id as its value.
const LabelAgent = "io.runbox.agent"

// agentMountDir is where a container sees its agent volume, read-only.
const agentMountDir = remote.DefaultAgentDir + "/agent"

// agentFile is the agent's name in its volume.
const agentFile = "runbox-agent"

// agentBuild is the static agent a container runs, kept in a volume of
// its own on the engine: copied there once per build, then mounted
// read-only into every container, so a new container pays for no copy.
// A mounted file cannot be changed from inside any container, so one
// sandbox cannot tamper with the agent of another.
type agentBuild struct {
	path   string // on this machine
	size   int64
	id     string // names the build: its Go build id, else its content's digest
	volume string // "runbox-agent-<id>"
}

// resolveAgent picks the agent binary for arch as the agent host would
// (Options.AgentBinary, else remote.Agent().Find) and names the build.
func resolveAgent(ctx context.Context, o Options, arch string) (agentBuild, error) {
	bin := o.AgentBinary
	if bin != "" {
		if err := remote.CheckStatic(bin, arch); err != nil {
			return agentBuild{}, fmt.Errorf("agent: %w", err)
		}
	} else {
		var err error
		if bin, err = remote.Agent().Find(ctx, arch, o.SourceDir); err != nil {
			return agentBuild{}, fmt.Errorf("agent: %w", err)
		}
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return agentBuild{}, fmt.Errorf("agent: %w", err)
	}
	id, err := buildID(bin, fi.Size())
	if err != nil {
		return agentBuild{}, fmt.Errorf("agent: %w", err)
	}
	return agentBuild{path: bin, size: fi.Size(), id: id, volume: "runbox-agent-" + id}, nil
}

// buildID names the binary at p: a digest of its Go build id (which the
// go tool derives from the binary's content) and its size, read from one
// ELF note rather than hashing tens of megabytes on every container; a
// digest of the whole content where there is no such note.
func buildID(p string, size int64) (string, error) {
	f, err := elf.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00", size)
	if sec := f.Section(".note.go.buildid"); sec != nil {
		note, err := sec.Data()
		if err == nil && len(note) > 16 {
			h.Write(note)
			return hex.EncodeToString(h.Sum(nil)[:8]), nil
		}
	}
	r, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// mount is the read-only mount of the build's volume.
func (b agentBuild) mount() mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Source: b.volume, Target: agentMountDir, ReadOnly: true}
}

// inContainer is where a container that mounts the volume sees the agent.
func (b agentBuild) inContainer() string { return path.Join(agentMountDir, agentFile) }

// ensureVolume makes sure the build's volume exists, filling a new one
// through a helper container that is created (never started) from image
// and removed. An existing volume is taken as filled; each container
// still checks the file's size (ready), so a volume left half-filled by a
// crash only costs the containers that see it a copy, until a later
// ensure fills it again.
func (b agentBuild) ensureVolume(ctx context.Context, cli *client.Client, image string, refill bool) error {
	if !refill {
		if _, err := cli.VolumeInspect(ctx, b.volume); err == nil {
			return nil
		} else if !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("docker: agent volume %s: %w", b.volume, err)
		}
	}
	if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: b.volume, Labels: map[string]string{LabelManaged: "true", LabelAgent: b.id}}); err != nil {
		return fmt.Errorf("docker: create agent volume %s: %w", b.volume, err)
	}
	cfg := &container.Config{Image: image, Entrypoint: []string{"/bin/sh"}, Labels: map[string]string{LabelManaged: "true", LabelAgent: b.id}}
	hc := &container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: b.volume, Target: "/agent"}}}
	h, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if err != nil {
		return fmt.Errorf("docker: helper container to fill %s: %w", b.volume, err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), h.ID, container.RemoveOptions{Force: true})
	f, err := os.Open(b.path)
	if err != nil {
		return fmt.Errorf("docker: agent: %w", err)
	}
	defer f.Close()
	if err := copyToContainer(ctx, cli, h.ID, "/agent/"+agentFile, f, b.size, 0o755); err != nil {
		return fmt.Errorf("docker: fill agent volume %s: %w", b.volume, err)
	}
	return nil
}

// ready reports whether container id sees the whole build in its volume.
func (b agentBuild) ready(ctx context.Context, cli *client.Client, id string) bool {
	st, err := cli.ContainerStatPath(ctx, id, b.inContainer())
	return err == nil && st.Size == b.size
}
