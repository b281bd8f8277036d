package workspace

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"unicode/utf8"
)

// Type is what a path is: a regular file, a symbolic link or a directory.
type Type string

// The types of entry a workspace holds. Devices, fifos and sockets are
// never copied.
const (
	TypeFile    Type = "file"
	TypeSymlink Type = "symlink"
	TypeDir     Type = "dir"
)

// Entry is one path of a tree as the comparison sees it.
type Entry struct {
	// Path is slash-separated and relative to the tree's root. It is a
	// byte string: names need not be UTF-8.
	Path string
	Type Type
	// Mode holds the permission bits; only the owner's execute bit takes
	// part in comparisons (as in git).
	Mode fs.FileMode
	// Size is the file's length (0 for links and directories).
	Size int64
	// MTime is the local modification time (Unix nanoseconds) when the
	// entry was scanned: a push gives the sandbox's copy the same time,
	// and a later scan that sees a file's size and time unchanged trusts
	// its hash instead of reading it again. Zero for the sandbox's side.
	MTime int64
	// Hash is the hex SHA-256 of a file's content or a link's target.
	Hash string
	// Link is a symbolic link's target.
	Link string
}

// same reports whether a and b hold the same thing (nil is absent).
func same(a, b *Entry) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Type != b.Type || a.Hash != b.Hash {
		return false
	}
	return a.Type != TypeFile || a.Mode&0o100 == b.Mode&0o100
}

// entryJSON is Entry on disk and on the wire: a name that is not UTF-8
// goes as base64 in path_b64, since JSON strings cannot carry it.
type entryJSON struct {
	Path    string `json:"path,omitempty"`
	PathB64 string `json:"path_b64,omitempty"`
	Type    Type   `json:"type"`
	Mode    uint32 `json:"mode"`
	Size    int64  `json:"size,omitempty"`
	MTime   int64  `json:"mtime,omitempty"`
	Hash    string `json:"hash,omitempty"`
	Link    string `json:"link,omitempty"`
}

func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Type: e.Type, Mode: uint32(e.Mode.Perm()), Size: e.Size, MTime: e.MTime, Hash: e.Hash, Link: e.Link}
	j.Path, j.PathB64 = EncodePath(e.Path)
	return json.Marshal(j)
}

func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	p, err := decodePath(j.Path, j.PathB64)
	if err != nil {
		return err
	}
	*e = Entry{Path: p, Type: j.Type, Mode: fs.FileMode(j.Mode).Perm(), Size: j.Size, MTime: j.MTime, Hash: j.Hash, Link: j.Link}
	return nil
}

// EncodePath returns p for a JSON string field, or, when p is not UTF-8
// (which a JSON string cannot carry), as base64 for a "path_b64" field.
func EncodePath(p string) (plain, b64 string) {
	if utf8.ValidString(p) {
		return p, ""
	}
	return "", base64.StdEncoding.EncodeToString([]byte(p))
}

func decodePath(plain, b64 string) (string, error) {
	if b64 == "" {
		return plain, nil
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("workspace: path_b64: %w", err)
	}
	return string(b), nil
}
