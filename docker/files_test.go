package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestExtract_RefusesEscapes protects the host from a hostile container:
// no archive entry may land outside the destination.
func TestExtract_RefusesEscapes(t *testing.T) {
	cases := []struct {
		name string
		hdrs []tar.Header
	}{
		{"dotdot", []tar.Header{{Name: "../x", Typeflag: tar.TypeReg}}},
		{"nested-dotdot", []tar.Header{{Name: "a/../../x", Typeflag: tar.TypeReg}}},
		{"absolute", []tar.Header{{Name: "/etc/x", Typeflag: tar.TypeReg}}},
		{"abs-symlink", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}},
		{"climbing-symlink", []tar.Header{{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../../etc"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, h := range c.hdrs {
				h.Mode = 0o644
				tw.WriteHeader(&h)
			}
			tw.Close()
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			os.Mkdir(dst, 0o755)
			if err := extract(&buf, dst); !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("extract(%s) = %v; want ErrUnsafePath", c.name, err)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 1 {
				t.Errorf("something was written beside dst: %v", ents)
			}
		})
	}
}

// TestDemux checks the multiplexed attach stream: stdout's bytes come
// through whole across frame boundaries, stderr's go aside.
func TestDemux(t *testing.T) {
	var in bytes.Buffer
	frame := func(s byte, p string) {
		in.Write([]byte{s, 0, 0, 0, 0, 0, 0, byte(len(p))})
		in.WriteString(p)
	}
	frame(1, "hel")
	frame(2, "oops")
	frame(1, "lo")
	var out, errb bytes.Buffer
	if err := demuxAll(&in, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello" || errb.String() != "oops" {
		t.Fatalf("demux = %q / %q", out.String(), errb.String())
	}
}
