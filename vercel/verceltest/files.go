package verceltest

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
)

// resolve is p in the sandbox: relative paths from cwd, else from the
// sandbox's directory.
func (ss *session) resolve(p, cwd string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if cwd == "" {
		cwd = ss.dir
	}
	return filepath.Join(cwd, p)
}

// writeFiles extracts a gzipped tar under the x-cwd directory, making
// parent directories as needed.
func (s *Server) writeFiles(w http.ResponseWriter, r *http.Request, ss *session) {
	if ct := r.Header.Get("Content-Type"); ct != "application/gzip" {
		apiError(w, http.StatusBadRequest, "bad_request", "expected application/gzip, got "+ct)
		return
	}
	base := ss.resolve(r.Header.Get("x-cwd"), "")
	gz, err := gzip.NewReader(r.Body)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", "not gzip: "+err.Error())
		return
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			apiError(w, http.StatusBadRequest, "bad_request", "bad tar: "+err.Error())
			return
		}
		if err := extract(filepath.Join(base, hdr.Name), hdr, tr); err != nil {
			apiError(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
	}
	writeJSON(w, map[string]any{})
}

func extract(dst string, hdr *tar.Header, r io.Reader) error {
	mode := fs.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		return os.MkdirAll(dst, mode|0o700)
	case tar.TypeReg:
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return os.Chmod(dst, mode)
	}
	return errors.New("unsupported tar entry type for " + hdr.Name)
}

type pathRequest struct {
	Path string `json:"path"`
	Cwd  string `json:"cwd"`
}

// readFile answers the file as an octet stream; a missing one is 404.
func (s *Server) readFile(w http.ResponseWriter, r *http.Request, ss *session) {
	var req pathRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Path == "" {
		apiError(w, http.StatusBadRequest, "bad_request", "path is required")
		return
	}
	f, err := os.Open(ss.resolve(req.Path, req.Cwd))
	if err != nil {
		apiError(w, http.StatusNotFound, "file_not_found", "File not found")
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	io.Copy(w, f)
}

// mkdir makes one directory (its parent must exist).
func (s *Server) mkdir(w http.ResponseWriter, r *http.Request, ss *session) {
	var req pathRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Path == "" {
		apiError(w, http.StatusBadRequest, "bad_request", "path is required")
		return
	}
	if err := os.Mkdir(ss.resolve(req.Path, req.Cwd), 0o755); err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	writeJSON(w, map[string]any{})
}
