package workspace

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/runbox/runbox/envs"
)

// remoteTree is the sandbox's tree: entries plus the content of files.
type remoteTree struct {
	entries Tree
	content map[string][]byte
	// unsafe are names the sandbox offered that cannot be written here
	// (absolute, ".."): reported, never applied.
	unsafe []string
	// id is the identity its marker file holds, "" without one.
	id string
}

// readRemote reads dir from env as one tar stream, keeping what the filter
// does not exclude, and refusing a tree whose files add up to more than
// maxBytes (when positive).
func readRemote(ctx context.Context, env envs.Environment, dir string, ignore *matcher, maxBytes int64) (*remoteTree, error) {
	rc, err := trees(env).GetTree(ctx, dir)
	if errors.Is(err, envs.ErrNotFound) {
		return &remoteTree{entries: Tree{}, content: map[string][]byte{}}, nil // a container made again
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: read the sandbox's %s: %w", dir, err)
	}
	defer rc.Close()
	rt := &remoteTree{entries: Tree{}, content: map[string][]byte{}}
	tr := tar.NewReader(rc)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return rt, nil
		}
		if err != nil {
			return nil, fmt.Errorf("workspace: read the sandbox's %s: %w", dir, err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if name == "" || name == "." {
			continue // the directory itself
		}
		if cleanRel(name) != nil {
			rt.unsafe = append(rt.unsafe, h.Name)
			continue
		}
		if isMarker(name) {
			if h.Typeflag == tar.TypeReg && h.Size <= 4096 {
				b, err := io.ReadAll(tr)
				if err != nil {
					return nil, fmt.Errorf("workspace: read the sandbox's %s: %w", path.Join(dir, name), err)
				}
				rt.id = parseMarker(b)
			}
			continue // never brought back nor compared
		}
		isDir := h.Typeflag == tar.TypeDir
		if ignore.matchPath(name, isDir) {
			continue
		}
		e := &Entry{Path: name, Mode: fs.FileMode(h.Mode).Perm()}
		switch h.Typeflag {
		case tar.TypeDir:
			e.Type = TypeDir
		case tar.TypeSymlink:
			e.Type, e.Link, e.Hash = TypeSymlink, h.Linkname, hashBytes([]byte(h.Linkname))
		case tar.TypeReg:
			if total += h.Size; maxBytes > 0 && total > maxBytes {
				return nil, fmt.Errorf("%w: the sandbox's %s holds more than %d bytes", ErrTooLarge, dir, maxBytes)
			}
			b, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil {
				return nil, fmt.Errorf("workspace: read the sandbox's %s: %w", path.Join(dir, name), err)
			}
			e.Type, e.Size, e.Hash = TypeFile, int64(len(b)), hashBytes(b)
			rt.content[name] = b
		case tar.TypeLink:
			// A hard link to a file read earlier: the same content.
			target := strings.TrimSuffix(strings.TrimPrefix(h.Linkname, "./"), "/")
			b, ok := rt.content[target]
			if !ok {
				continue
			}
			e.Type, e.Size, e.Hash = TypeFile, int64(len(b)), hashBytes(b)
			rt.content[name] = b
		default:
			continue // devices, fifos: never brought back
		}
		rt.entries[name] = e
	}
}
