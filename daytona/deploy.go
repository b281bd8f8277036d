package daytona

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"

	"github.com/runbox/runbox/agent/remote"
)

var _ remote.Recopier = (*sandbox)(nil)

// CopyIn uploads the agent through the toolbox's file routes, unless a
// file of that name and size is there already (the host names what it
// deploys by its digest). The upload goes to a temporary name, is made
// executable and then renamed, so an agent that another environment is
// starting from p is never seen half written.
func (s *sandbox) CopyIn(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	sb, err := s.current(id)
	if err != nil {
		return err
	}
	fi, err := sb.FileSystem.GetFileInfo(ctx, p)
	switch {
	case err == nil && !fi.IsDirectory && fi.Size == size:
		return nil
	case err != nil && status(err) != http.StatusNotFound:
		return fmt.Errorf("daytona: look at %s: %w", p, err)
	}
	return s.upload(ctx, sb, p, src, size, perm, err == nil)
}

// Recopy uploads src to p again, whatever is there: the agent kept by its
// name and size did not start.
func (s *sandbox) Recopy(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	sb, err := s.current(id)
	if err != nil {
		return err
	}
	return s.upload(ctx, sb, p, src, size, perm, true)
}

// upload writes src to p by way of a temporary file; exists says p holds
// something to remove first (the toolbox's move refuses to overwrite).
func (s *sandbox) upload(ctx context.Context, sb *sdk.Sandbox, p string, src io.ReaderAt, size int64, perm fs.FileMode, exists bool) error {
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(src, 0, size), data); err != nil {
		return fmt.Errorf("daytona: read the file for %s: %w", p, err)
	}
	tmp := p + ".tmp-" + randomID()
	if err := sb.FileSystem.UploadFile(ctx, data, tmp); err != nil {
		return fmt.Errorf("daytona: upload %s: %w", tmp, err)
	}
	err := sb.FileSystem.SetFilePermissions(ctx, tmp, options.WithPermissionMode(fmt.Sprintf("%o", perm.Perm())))
	if err == nil && exists {
		if err = sb.FileSystem.DeleteFile(ctx, p, false); status(err) == http.StatusNotFound {
			err = nil
		}
	}
	if err == nil {
		err = sb.FileSystem.MoveFiles(ctx, tmp, p)
		if status(err) == http.StatusConflict { // another environment put it there meanwhile
			if fi, ierr := sb.FileSystem.GetFileInfo(ctx, p); ierr == nil && !fi.IsDirectory && fi.Size == size {
				err = errAlreadyThere
			}
		}
	}
	if err != nil {
		if err == errAlreadyThere {
			err = nil
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		sb.FileSystem.DeleteFile(dctx, tmp, false)
		cancel()
		if err != nil {
			return fmt.Errorf("daytona: put %s in place: %w", p, err)
		}
	}
	return nil
}

// errAlreadyThere marks a move that found the same file put in place by
// another environment: the temporary copy goes, nothing failed.
var errAlreadyThere = errors.New("daytona: already there")
