package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"
)

func tarOf(t *testing.T, hdrs ...tar.Header) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hdrs {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return &b
}

func names(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name+">"+h.Linkname)
	}
}

// TestRebase_RefusesEscapes: a tree put into a directory cannot name a
// path outside it; plain names land under the directory, after its own
// directories.
func TestRebase_RefusesEscapes(t *testing.T) {
	for _, name := range []string{"../x", "a/../../x", "/etc/x"} {
		err := rebase(io.Discard, tarOf(t, tar.Header{Name: name, Typeflag: tar.TypeReg}), "workspace")
		if !errors.Is(err, ErrUnsafePath) {
			t.Errorf("rebase(%q) = %v; want ErrUnsafePath", name, err)
		}
	}
	var out bytes.Buffer
	in := tarOf(t, tar.Header{Name: "d/", Typeflag: tar.TypeDir}, tar.Header{Name: "d/l", Typeflag: tar.TypeSymlink, Linkname: "../f"})
	if err := rebase(&out, in, "srv/ws"); err != nil {
		t.Fatal(err)
	}
	got := names(t, &out)
	want := []string{"srv/>", "srv/ws/>", "srv/ws/d/>", "srv/ws/d/l>../f"}
	if len(got) != len(want) {
		t.Fatalf("rebased names = %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rebased names = %q; want %q", got, want)
		}
	}
}

// TestUnbase_StripsTheDirectory: the engine's names lose their first
// element, hard-link targets too, and the directory's own entry goes.
func TestUnbase_StripsTheDirectory(t *testing.T) {
	var out bytes.Buffer
	in := tarOf(t,
		tar.Header{Name: "workspace/", Typeflag: tar.TypeDir},
		tar.Header{Name: "workspace/a", Typeflag: tar.TypeReg},
		tar.Header{Name: "workspace/b", Typeflag: tar.TypeLink, Linkname: "workspace/a"})
	if err := unbase(&out, in); err != nil {
		t.Fatal(err)
	}
	got := names(t, &out)
	if len(got) != 2 || got[0] != "a>" || got[1] != "b>a" {
		t.Errorf("unbased names = %q; want a, b>a", got)
	}
}
