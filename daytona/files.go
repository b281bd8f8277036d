package daytona

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"

	"github.com/runbox/runbox/envs"
)

// checkPath refuses a path that is not absolute or that climbs with "..":
// a file goes exactly where it is named, never beside it.
func checkPath(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("daytona: path %q must be absolute and clean (no .., no //): %w", p, envs.ErrBadCommand)
	}
	return nil
}

// PutFile uploads r to p with mode perm.
func (x *execEnv) PutFile(ctx context.Context, p string, r io.Reader, perm os.FileMode) error {
	if err := checkPath(p); err != nil {
		return err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("daytona: put %s: read: %w", p, err)
	}
	if err := x.sb.FileSystem.UploadFile(ctx, data, p); err != nil {
		return x.gone(fmt.Errorf("daytona: upload %s: %w", p, err))
	}
	if err := x.sb.FileSystem.SetFilePermissions(ctx, p, options.WithPermissionMode(fmt.Sprintf("%o", perm.Perm()))); err != nil {
		return x.gone(fmt.Errorf("daytona: chmod %s: %w", p, err))
	}
	return nil
}

// GetFile downloads p; a missing file is envs.ErrNotFound.
func (x *execEnv) GetFile(ctx context.Context, p string) (io.ReadCloser, error) {
	if err := checkPath(p); err != nil {
		return nil, err
	}
	rc, err := x.sb.FileSystem.DownloadFileStream(ctx, p)
	if err == nil {
		return rc, nil
	}
	if status(err) == http.StatusNotFound {
		if gerr := x.gone(err); gerr != err {
			return nil, gerr
		}
		return nil, fmt.Errorf("daytona: download %s: %w: %v", p, envs.ErrNotFound, err)
	}
	return nil, x.gone(fmt.Errorf("daytona: download %s: %w", p, err))
}
