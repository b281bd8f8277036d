package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/envs"
)

// ErrUnsafePath is a path that would escape its target: a ".." element, an
// absolute name in an archive, or a symlink that points outside.
var ErrUnsafePath = errors.New("docker: path escapes the target")

// putFile writes one file into the container through the archive API. The
// parent directories are created as part of the archive.
func putFile(ctx context.Context, cli *client.Client, id, p string, r io.Reader, perm os.FileMode) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("docker: put %s: the fallback needs an absolute path: %w", p, envs.ErrBadCommand)
	}
	// The archive API wants the size up front.
	tmp, err := os.CreateTemp("", "runbox-put-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := io.Copy(tmp, r)
	if err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return copyToContainer(ctx, cli, id, p, tmp, n, perm)
}

// copyToContainer writes size bytes of r to the absolute path p in the
// container, creating its parent directories, with the archive API.
func copyToContainer(ctx context.Context, cli *client.Client, id, p string, r io.Reader, size int64, perm fs.FileMode) error {
	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() { // ends when the archive is written or the reader is closed below
		defer close(written)
		tw := tar.NewWriter(pw)
		clean := strings.TrimPrefix(path.Clean(p), "/")
		dirs := strings.Split(path.Dir(clean), "/")
		var err error
		for i := range dirs {
			if dirs[0] == "." {
				break
			}
			if err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(dirs[:i+1], "/") + "/", Mode: 0o755}); err != nil {
				break
			}
		}
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: clean, Mode: int64(perm.Perm()), Size: size})
		}
		if err == nil {
			_, err = io.CopyN(tw, r, size)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	err := cli.CopyToContainer(ctx, id, "/", pr, container.CopyToContainerOptions{})
	pr.CloseWithError(errors.New("copy ended"))
	<-written
	return err
}

// getFile reads one regular file out of the container.
func getFile(ctx context.Context, cli *client.Client, id, p string) (io.ReadCloser, error) {
	rc, st, err := cli.CopyFromContainer(ctx, id, p)
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("docker: get %s: %w", p, envs.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode.IsRegular() {
		rc.Close()
		return nil, fmt.Errorf("docker: get %s: not a regular file: %w", p, envs.ErrUnsupported)
	}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("docker: get %s: %w", p, err)
		}
		if h.Typeflag == tar.TypeReg {
			return readCloser{tr, rc}, nil
		}
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// CopyTo copies a host file or directory tree into the container, as
// dstDir/<base name of src>. Symlinks are copied as links; one whose
// target is absolute or climbs out of the tree is refused.
func (e *Env) CopyTo(ctx context.Context, src, dstDir string) error {
	id := e.ContainerID()
	root, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTree(pw, root)) }() // ends with the walk or when pr is closed
	err = e.cli.CopyToContainer(ctx, id, dstDir, pr, container.CopyToContainerOptions{})
	pr.CloseWithError(errors.New("copy ended"))
	if err != nil {
		return fmt.Errorf("docker: copy %s to %s: %w", src, dstDir, err)
	}
	return nil
}

func writeTree(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	base := filepath.Dir(root)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
			if err := checkLink(rel, link); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// CopyFrom copies a file or directory tree out of the container into
// dstDir on the host. Entries that would land outside dstDir (".."
// elements, absolute names) and symlinks that point outside it are refused
// with ErrUnsafePath before anything is written for them.
func (e *Env) CopyFrom(ctx context.Context, src, dstDir string) error {
	rc, _, err := e.cli.CopyFromContainer(ctx, e.ContainerID(), src)
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: copy %s: %w", src, envs.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("docker: copy %s: %w", src, err)
	}
	defer rc.Close()
	if err := extract(rc, dstDir); err != nil {
		return fmt.Errorf("docker: copy %s: %w", src, err)
	}
	return nil
}

// extract unpacks a tar stream under dst, refusing anything that escapes.
func extract(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name, err := safeName(h.Name)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, name)
		if err := noSymlinkParents(dst, name); err != nil {
			return err
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := checkLink(name, h.Linkname); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		default:
			// Devices, fifos and hard links are skipped: they have no
			// business in a copied workspace.
		}
	}
}

// safeName cleans an archive entry name and refuses one that is absolute
// or climbs out.
func safeName(name string) (string, error) {
	if path.IsAbs(name) || strings.HasPrefix(name, `\`) {
		return "", fmt.Errorf("%w: absolute name %q", ErrUnsafePath, name)
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q", ErrUnsafePath, name)
	}
	return filepath.FromSlash(c), nil
}

// checkLink refuses a symlink at name whose target is absolute or
// resolves outside the tree.
func checkLink(name, target string) error {
	if path.IsAbs(target) || filepath.IsAbs(target) {
		return fmt.Errorf("%w: symlink %s -> %s is absolute", ErrUnsafePath, name, target)
	}
	joined := path.Clean(path.Join(path.Dir(filepath.ToSlash(name)), target))
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return fmt.Errorf("%w: symlink %s -> %s leaves the tree", ErrUnsafePath, name, target)
	}
	return nil
}

// noSymlinkParents refuses to write through a symlinked directory that an
// earlier entry created.
func noSymlinkParents(dst, name string) error {
	dir := filepath.Dir(name)
	cur := dst
	for _, part := range strings.Split(dir, string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		if fi, err := os.Lstat(cur); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s goes through symlink %s", ErrUnsafePath, name, cur)
		}
	}
	return nil
}
