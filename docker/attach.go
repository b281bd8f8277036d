package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/runbox/runbox/envs"
)

// attach starts argv with an exec whose stdin and stdout are a byte
// stream. The exec has no TTY (a TTY would translate bytes), so the engine
// multiplexes stdout and stderr with 8-byte headers: execStream takes
// stdout's frames apart from stderr's, and keeps stderr's tail for error
// messages.
func attach(ctx context.Context, cli *client.Client, id string, argv []string) (*execStream, error) {
	x, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd:          argv,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("docker: exec %s: %w", argv[0], err)
	}
	hr, err := cli.ContainerExecAttach(ctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker: attach to %s: %w", argv[0], err)
	}
	s := &execStream{hr: hr, stderr: envs.NewTail(4096)}
	s.r = &demux{r: hr.Reader, stderr: s.stderr}
	return s, nil
}

// execStream is an exec attach as a byte stream.
type execStream struct {
	hr     types.HijackedResponse
	r      *demux
	stderr *envs.Tail
}

func (s *execStream) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *execStream) Write(p []byte) (int, error) { return s.hr.Conn.Write(p) }
func (s *execStream) Close() error                { s.hr.Close(); return nil }

// Stderr is the end of what the process wrote to its stderr.
func (s *execStream) Stderr() string { return s.stderr.String() }

// writeByExec writes r to p in the container through an exec that copies
// its stdin there, for where the archive API cannot write.
func writeByExec(ctx context.Context, cli *client.Client, id, p string, r io.Reader, size int64, perm fs.FileMode) error {
	tmp := p + ".tmp"
	script := fmt.Sprintf(`mkdir -p "$(dirname %[1]s)" && cat >%[1]s && n=$(wc -c <%[1]s) && [ "$n" -eq %[2]d ] || { echo "received $n of %[2]d bytes" >&2; rm -f %[1]s; exit 1; }; chmod %[4]o %[1]s && mv %[1]s %[3]s`, tmp, size, p, perm.Perm())
	x, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: []string{"/bin/sh", "-c", script}, AttachStdin: true, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	hr, err := cli.ContainerExecAttach(ctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	defer hr.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { defer close(done); demuxAll(hr.Reader, &out, &out) }() // ends with the exec's output
	_, err = io.Copy(hr.Conn, r)
	hr.CloseWrite()
	<-done
	if err != nil {
		return err
	}
	xi, err := cli.ContainerExecInspect(ctx, x.ID)
	if err != nil {
		return err
	}
	if xi.ExitCode != 0 {
		return fmt.Errorf("writing %s failed: %s", p, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// demux reads the engine's multiplexed attach stream (a header of stream
// type, three zero bytes and a big-endian uint32 length, then that many
// bytes) and returns stdout's bytes; stderr's go to stderr.
type demux struct {
	r      io.Reader
	stderr io.Writer
	left   int // bytes of the current stdout frame not yet read
}

const maxDemuxFrame = 1 << 24

func (d *demux) Read(p []byte) (int, error) {
	for d.left == 0 {
		var h [8]byte
		if _, err := io.ReadFull(d.r, h[:]); err != nil {
			return 0, err
		}
		n := int(binary.BigEndian.Uint32(h[4:]))
		if n > maxDemuxFrame {
			return 0, fmt.Errorf("docker: attach stream frame of %d bytes", n)
		}
		switch h[0] {
		case 1:
			d.left = n
		case 2, 0, 3:
			if _, err := io.CopyN(d.stderr, d.r, int64(n)); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("docker: attach stream: unknown stream %d", h[0])
		}
	}
	if len(p) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.left -= n
	if err == io.EOF && d.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// demuxAll copies a whole multiplexed stream.
func demuxAll(r io.Reader, stdout, stderr io.Writer) error {
	_, err := io.Copy(stdout, &demux{r: r, stderr: stderr})
	return err
}
