package egress

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestProxy_PackageManagers: pip and npm, configured only by Env,
// download a package from a loopback registry through the proxy (the
// registry allowed by its address), as sessions will; with the registry
// off the allow-list both fail, which shows they went through the proxy.
func TestProxy_PackageManagers(t *testing.T) {
	// pip is the one program here that scripts/test does not install
	// (npm it does), so its absence is a plain skip, not a CI failure.
	if _, err := exec.LookPath("pip"); err != nil {
		t.Skipf("pip is not installed: %v", err)
	}
	wheel, tarball := demoWheel(t), demoTarball(t)
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("/simple/demo-pkg/", func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256(wheel)
		fmt.Fprintf(w, `<html><body><a href="/files/demo_pkg-1.0-py3-none-any.whl#sha256=%s">demo_pkg-1.0-py3-none-any.whl</a></body></html>`, hex.EncodeToString(sum[:]))
	})
	mux.HandleFunc("/files/demo_pkg-1.0-py3-none-any.whl", func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
	mux.HandleFunc("/demo-pkg", func(w http.ResponseWriter, r *http.Request) {
		sum := sha1.Sum(tarball)
		json.NewEncoder(w).Encode(map[string]any{
			"name": "demo-pkg", "dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{"1.0.0": map[string]any{
				"name": "demo-pkg", "version": "1.0.0",
				"dist": map[string]string{"tarball": base + "/demo-pkg/-/demo-pkg-1.0.0.tgz", "shasum": hex.EncodeToString(sum[:])},
			}},
		})
	})
	mux.HandleFunc("/demo-pkg/-/demo-pkg-1.0.0.tgz", func(w http.ResponseWriter, r *http.Request) { w.Write(tarball) })
	srv := newServer(t, mux)
	base = srv.URL
	for _, allowed := range []bool{true, false} {
		t.Run(fmt.Sprint("allowed=", allowed), func(t *testing.T) {
			o := Options{}
			if allowed {
				o.Allow = rules(t, fmt.Sprintf("127.0.0.1:%d", serverPort(t, srv)))
			}
			p := startProxy(t, o)
			pipDir, npmDir := t.TempDir(), t.TempDir()
			_, pipErr, _ := run(t, p.Env(), "pip", "download", "--no-deps", "--disable-pip-version-check", "--no-cache-dir",
				"--retries", "0", "--index-url", srv.URL+"/simple", "--trusted-host", "127.0.0.1", "-d", pipDir, "demo-pkg")
			os.WriteFile(filepath.Join(npmDir, "package.json"), []byte(`{"name":"app","version":"1.0.0"}`), 0o600)
			_, npmErr, _ := run(t, p.Env(), "npm", "install", "--prefix", npmDir, "--registry", srv.URL+"/", "--fetch-retries", "0",
				"--cache", filepath.Join(npmDir, ".cache"), "--no-audit", "--no-fund", "--no-update-notifier", "demo-pkg")
			_, err := os.Stat(filepath.Join(pipDir, "demo_pkg-1.0-py3-none-any.whl"))
			if (err == nil) != allowed {
				t.Errorf("pip download: got the wheel = %v; want %v: %s", err == nil, allowed, pipErr)
			}
			_, err = os.Stat(filepath.Join(npmDir, "node_modules", "demo-pkg", "package.json"))
			if (err == nil) != allowed {
				t.Errorf("npm install: installed = %v; want %v: %s", err == nil, allowed, npmErr)
			}
			if v, _ := p.Violations(0); (len(v) == 0) != allowed {
				t.Fatalf("violations = %+v; want some exactly when not allowed", v)
			}
		})
	}
}

// demoWheel is a minimal valid wheel of demo-pkg 1.0.
func demoWheel(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	files := map[string]string{
		"demo_pkg/__init__.py":            "",
		"demo_pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
		"demo_pkg-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"demo_pkg-1.0.dist-info/RECORD":   "",
	}
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// demoTarball is an npm package tarball of demo-pkg 1.0.0.
func demoTarball(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name":"demo-pkg","version":"1.0.0"}`,
		"package/index.js":     "module.exports = 1;\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}
