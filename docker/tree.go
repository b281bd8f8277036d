package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/runbox/runbox/envs"
)

var _ envs.TreeTransfer = (*Env)(nil)

// PutTree unpacks the tar stream r into dir in the container with one
// archive call. dir's missing parents are created; an entry whose name is
// absolute or climbs out of dir is refused with ErrUnsafePath and ends the
// transfer. Entries are written under their names as given, so dir must
// be an absolute path.
func (e *Env) PutTree(ctx context.Context, dir string, r io.Reader) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("docker: put tree %s: want an absolute path: %w", dir, envs.ErrBadCommand)
	}
	root := strings.TrimPrefix(path.Clean(dir), "/")
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() { // ends when the stream is rewritten or pr is closed below
		defer close(done)
		pw.CloseWithError(rebase(pw, r, root))
	}()
	err := e.cli.CopyToContainer(ctx, e.ContainerID(), "/", pr, container.CopyToContainerOptions{})
	pr.CloseWithError(errors.New("copy ended"))
	<-done
	if err != nil {
		return fmt.Errorf("docker: put tree %s: %w", dir, err)
	}
	return nil
}

// rebase copies the tar stream r to w with every name put under root,
// preceded by root's own directories so that they exist.
func rebase(w io.Writer, r io.Reader, root string) error {
	tw := tar.NewWriter(w)
	if root != "" {
		parts := strings.Split(root, "/")
		for i := range parts {
			h := &tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(parts[:i+1], "/") + "/", Mode: 0o755}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		}
	}
	return copyTar(tw, r, func(h *tar.Header) (bool, error) {
		name, err := safeName(h.Name)
		if err != nil {
			return false, err
		}
		name = path.Join(root, strings.ReplaceAll(name, "\\", "/"))
		if h.Typeflag == tar.TypeDir {
			name += "/"
		}
		h.Name = name
		return true, nil
	})
}

// GetTree returns the tree at dir in the container as a tar stream with
// names relative to dir. The engine's archive names every entry under
// dir's base name; that first element is taken off here.
func (e *Env) GetTree(ctx context.Context, dir string) (io.ReadCloser, error) {
	rc, _, err := e.cli.CopyFromContainer(ctx, e.ContainerID(), dir)
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("docker: get tree %s: %w", dir, envs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("docker: get tree %s: %w", dir, err)
	}
	pr, pw := io.Pipe()
	go func() { // ends when the archive is read through or the reader is closed
		err := unbase(pw, rc)
		rc.Close()
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// unbase copies the tar stream r to w without the first element of each
// name; the entry for that element itself is dropped.
func unbase(w io.Writer, r io.Reader) error {
	return copyTar(tar.NewWriter(w), r, func(h *tar.Header) (bool, error) {
		name := strings.TrimPrefix(h.Name, "./")
		i := strings.IndexByte(name, '/')
		if i < 0 || strings.Trim(name[i:], "/") == "" {
			return false, nil // the directory itself
		}
		h.Name = name[i+1:]
		if h.Typeflag == tar.TypeLink {
			if j := strings.IndexByte(strings.TrimPrefix(h.Linkname, "./"), '/'); j >= 0 {
				h.Linkname = strings.TrimPrefix(h.Linkname, "./")[j+1:]
			}
		}
		return true, nil
	})
}

// copyTar copies the tar stream r into tw, each entry after rename has
// changed its header (an entry it does not keep is left out; its error
// stops the copy), and closes tw at the end of r.
func copyTar(tw *tar.Writer, r io.Reader, rename func(*tar.Header) (keep bool, err error)) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		keep, err := rename(h)
		if err != nil {
			return err
		}
		if !keep {
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}
