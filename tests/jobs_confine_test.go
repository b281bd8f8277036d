package tests

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rawRequest is a script that sends one JSON line to the unix socket at
// path and prints the answer: what any program can do that finds the
// socket, without runbox's client and its checks.
func rawRequest(path string, req any) string {
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`python3 - <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(%q)
except OSError as e:
    print("CONNECT-FAILED", e)
    sys.exit(0)
s.sendall(%q.encode() + b"\n")
s.settimeout(60)
out = b""
while True:
    try:
        b = s.recv(65536)
    except OSError as e:
        print("RECV-FAILED", e)
        break
    if not b:
        break
    out += b
    if out.endswith(b"\n"):
        break
print("ANSWER", out.decode(errors="replace"))
PY
`, path, string(b))
}

var jobIDIn = regexp.MustCompile(`"id":"([0-9a-f]{12})"`)

// TestJobs_ConfinedCommandStartsNoUnconfinedJob protects the promise that
// the job daemon acts only within its caller's confinement: a command
// confined under workspace, read-only or --network none that writes a raw
// start request (no sandbox named in it) to the daemon's socket gets a job
// that is at least as confined — it writes nothing outside, reads no ssh
// key, changes no ~/.bashrc and reaches no loopback port. The same request
// from a command with the sandbox off starts a job that does all of it
// (the control: the attack is real). As root and as an unprivileged user.
func TestJobs_ConfinedCommandStartsNoUnconfinedJob(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, outside := sandboxDirs(t, u)
			state := filepath.Join(home, "state")
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state}
			victim := filepath.Join(outside, "victim.txt")
			stolen := filepath.Join(outside, "stolen")
			bashrc := filepath.Join(home, ".bashrc")
			mkdirOwned(t, u, filepath.Join(home, ".ssh"))
			key := "-----BEGIN OPENSSH PRIVATE KEY----- canary-" + randomSecret(t, "k")
			writeOwned(t, u, filepath.Join(home, ".ssh", "id_ed25519"), key, 0o600)
			os.Chmod(outside, 0o777)
			tcp := listenTCP(t)
			reset := func(t *testing.T) {
				writeOwned(t, u, victim, "keep me\n", 0o666)
				writeOwned(t, u, bashrc, "# mine\n", 0o644)
				os.Remove(stolen)
			}
			// The daemon runs (started from the user's shell, unconfined).
			if _, errOut, code := u.run(t, env, "ps"); code != 0 {
				t.Fatalf("ps: exit %d: %s", code, errOut)
			}
			sock := filepath.Join(state, "run", "daemon.sock")
			attack := func(t *testing.T, name string, flags ...string) (id string, escaped []string) {
				t.Helper()
				reset(t)
				marker := "hello-" + name
				job := fmt.Sprintf("echo pwned > %s; cat ~/.ssh/id_ed25519 > %s; echo owned >> ~/.bashrc; echo %s > /dev/tcp/127.0.0.1/%d",
					victim, stolen, marker, tcp.port)
				script := rawRequest(sock, map[string]any{"op": "start", "start": map[string]any{"shell": job, "owner": "user", "dir": ws}})
				writeOwned(t, u, filepath.Join(ws, "attack.sh"), script, 0o755)
				args := append([]string{"--yolo"}, flags...)
				args = append(args, "run", "--cwd", ws, "--", "bash ./attack.sh")
				out, errOut, _ := u.run(t, env, args...)
				m := jobIDIn.FindStringSubmatch(out)
				if m == nil {
					return "", nil // refused: nothing ran
				}
				id = m[1]
				if out, errOut, code := u.run(t, env, "wait", "--timeout", "60s", id); code == 124 || strings.Contains(out, "running") {
					t.Fatalf("job %s did not end: %s %s", id, out, errOut)
				}
				if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
					escaped = append(escaped, "wrote outside the workspace")
				}
				if b, _ := os.ReadFile(stolen); strings.Contains(string(b), key) {
					escaped = append(escaped, "read the ssh key")
				}
				if b, _ := os.ReadFile(bashrc); string(b) != "# mine\n" {
					escaped = append(escaped, "appended to ~/.bashrc")
				}
				if tcp.got(marker)(t) {
					escaped = append(escaped, "reached a loopback port")
				}
				_ = errOut
				return id, escaped
			}
			for _, c := range []struct {
				name  string
				flags []string
			}{
				{"workspace", []string{"--sandbox", "workspace"}},
				{"read-only", []string{"--sandbox", "read-only"}},
				{"network-none", []string{"--sandbox", "workspace", "--network", "none"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					id, escaped := attack(t, c.name, c.flags...)
					if len(escaped) > 0 {
						t.Errorf("a job started by a command confined under %s escaped: %s", c.name, strings.Join(escaped, ", "))
					}
					if id == "" {
						return
					}
					// The daemon decided the job's sandbox itself.
					var rec struct {
						Confine *struct {
							Profile string `json:"profile"`
							Network string `json:"network"`
						} `json:"confine"`
					}
					b, err := os.ReadFile(filepath.Join(state, "jobs", id, "job.json"))
					if err == nil {
						err = json.Unmarshal(b, &rec)
					}
					if err != nil || rec.Confine == nil || rec.Confine.Profile != "read-only" || rec.Confine.Network != "off" {
						t.Errorf("job %s's record %s (%v); want the strictest sandbox (read-only, network off)", id, b, err)
					}
				})
			}
			t.Run("control", func(t *testing.T) {
				id, escaped := attack(t, "control", "--sandbox", "off")
				if id == "" || len(escaped) != 4 {
					t.Errorf("with the sandbox off the raw start gave job %q doing only %v: the attack proves nothing", id, escaped)
				}
			})
		})
	}
}

// TestJobs_ConfinedCommandCannotDriveAJobsStdin: a job's control socket
// (jobs/ID/ctl.sock) serves the daemon only. A confined command that
// writes a line to it for an unconfined shell job runs nothing there; the
// same write from a command with the sandbox off does (the control).
func TestJobs_ConfinedCommandCannotDriveAJobsStdin(t *testing.T) {
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			home, ws, outside := sandboxDirs(t, u)
			state := filepath.Join(home, "state")
			env := []string{"HOME=" + home, "RUNBOX_STATE_DIR=" + state}
			victim := filepath.Join(outside, "victim.txt")
			os.Chmod(outside, 0o777)
			for _, profile := range []string{"workspace", "off"} {
				writeOwned(t, u, victim, "keep me\n", 0o666)
				out, errOut, code := u.run(t, env, "--yolo", "--sandbox", "off", "start", "--cwd", ws, "--", "bash")
				id := strings.TrimSpace(out)
				if code != 0 || id == "" {
					t.Fatalf("start: exit %d: %s", code, errOut)
				}
				line := base64.StdEncoding.EncodeToString([]byte("echo pwned > " + victim + "\n"))
				script := rawRequest(filepath.Join(state, "jobs", id, "ctl.sock"), map[string]any{"op": "write", "data": line})
				writeOwned(t, u, filepath.Join(ws, "ctl.sh"), script, 0o755)
				u.run(t, env, "--yolo", "--sandbox", profile, "run", "--cwd", ws, "--", "bash ./ctl.sh")
				u.run(t, env, "close", id)
				u.run(t, env, "wait", "--timeout", "60s", id)
				b, _ := os.ReadFile(victim)
				if wrote := string(b) != "keep me\n"; wrote != (profile == "off") {
					t.Errorf("sandbox %s: the write through ctl.sock ran: %t; want it to run only with the sandbox off", profile, wrote)
				}
			}
		})
	}
}
