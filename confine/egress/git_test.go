package egress

import (
	"fmt"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/integration"
)

// TestProxy_GitClone: ordinary work — git, configured only by Env,
// clones over smart HTTP from a loopback git http-backend through the
// proxy; with the server off the allow-list the same clone fails with
// the proxy's reason.
func TestProxy_GitClone(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		integration.Skip(t, "git is not installed: %v", err)
	}
	out, err := exec.Command(gitPath, "--exec-path").Output()
	if err != nil {
		integration.Skip(t, "git --exec-path: %v", err)
	}
	backendPath := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backendPath); err != nil {
		integration.Skip(t, "git-http-backend is not installed: %v", err)
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "hello through the proxy"},
		{"clone", "-q", "--bare", work, filepath.Join(root, "repo.git")},
	} {
		if out, err := exec.Command(gitPath, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	srv := newServer(t, &cgi.Handler{
		Path: backendPath,
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	})
	port := serverPort(t, srv)

	for _, allowed := range []bool{true, false} {
		t.Run(fmt.Sprint("allowed=", allowed), func(t *testing.T) {
			o := Options{}
			if allowed {
				o.Allow = rules(t, fmt.Sprintf("127.0.0.1:%d", port))
			}
			p := startProxy(t, o)
			dir := filepath.Join(t.TempDir(), "clone")
			_, stderr, code := run(t, p.Env(), "git", "clone", "-q", srv.URL+"/repo.git", dir)
			if !allowed {
				if code == 0 || !strings.Contains(stderr, "403") {
					t.Fatalf("clone of a denied server: exit %d, %q; want a 403 failure", code, stderr)
				}
				if v, _ := p.Violations(0); len(v) == 0 {
					t.Fatal("no violation recorded")
				}
				return
			}
			if code != 0 {
				t.Fatalf("git clone: exit %d: %s", code, stderr)
			}
			log, _, _ := run(t, nil, "git", "-C", dir, "log", "--format=%s")
			if strings.TrimSpace(log) != "hello through the proxy" {
				t.Fatalf("cloned log = %q", log)
			}
		})
	}
}
