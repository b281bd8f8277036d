package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FileDigest returns the SHA-256 of the file at path, in hex. The answer
// is kept in the user's cache, keyed by the file's absolute path, size,
// modification time and (where the system has them) change time, inode
// and device: a binary that has not changed since it was last hashed is
// not read again, which is what makes a one-shot command through a
// remote backend cheap. Writing a file changes its change time whatever
// its modification time is made to say, so an edited binary is always
// hashed again. A cache that cannot be read or written costs only the
// hashing.
func FileDigest(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("remote: digest of %s: %w", path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return "", fmt.Errorf("remote: digest of %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("remote: digest of %s: %w", path, err)
	}
	key := abs + "\x00" + fileKey(fi)
	entry := digestEntry(abs)
	if b, err := os.ReadFile(entry); err == nil {
		if k, sum, ok := strings.Cut(string(b), "\n"); ok && k == key && len(sum) == 2*sha256.Size {
			return sum, nil
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("remote: digest of %s: %w", path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	saveDigest(entry, key+"\n"+sum)
	return sum, nil
}

// digestEntry is the cache file that holds the digest of the file at abs.
func digestEntry(abs string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	name := sha256.Sum256([]byte(abs))
	return filepath.Join(cache, "runbox", "sums", hex.EncodeToString(name[:12]))
}

// saveDigest writes an entry through a temporary file and a rename, so a
// reader never sees half of one. Best effort: a failure costs a hash.
func saveDigest(entry, content string) {
	dir := filepath.Dir(entry)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".sum.*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(content)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), entry) != nil {
		os.Remove(tmp.Name())
	}
}
