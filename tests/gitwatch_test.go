package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSandbox_GitLeftoversDisarmedWhileTheJobRuns: a background job (and
// a long foreground command) plants an embedded repository with a
// core.fsmonitor, adds it as a gitlink, and stays running, so that the
// user's git status (a prompt's, an editor's) runs the program while it
// lives; it then plants again after the first was made inert. Under
// --sandbox off (the control) the user's git runs the planted program.
// Under the default profile the plant is made inert while the command
// runs, the user's git runs nothing, and the second plant stops the
// command, whose result says why. As root and as an unprivileged user.
func TestSandbox_GitLeftoversDisarmedWhileTheJobRuns(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, u := range users(t) {
		t.Run(u.name, func(t *testing.T) {
			for _, door := range []string{"start", "run"} {
				for _, profile := range []string{"off", "workspace"} {
					t.Run(door+"-"+profile, func(t *testing.T) { gitPlantedWhileRunning(t, u, door, profile) })
				}
			}
		})
	}
}

func gitPlantedWhileRunning(t *testing.T, u user, door, profile string) {
	home, env, ws := gitWorkspace(t, u, "ws-running-"+door+"-"+profile)
	t.Cleanup(func() { stopDaemon(filepath.Join(home, "state")) })
	_, _, outside := sandboxDirs(t, u)
	first, second := filepath.Join(outside, "RAN-first-"+door+"-"+profile), filepath.Join(outside, "RAN-second-"+door+"-"+profile)
	script := `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid
git init -q sub && (cd sub && echo x > x && git add x && git commit -qm x && git config core.fsmonitor 'touch ` + first + `' && echo y > x)
git add sub
touch planted
while [ ! -e go ]; do sleep 0.1; done
git -C sub config core.fsmonitor 'touch ` + second + `'
echo replanted
sleep 300
`
	writeOwned(t, u, filepath.Join(ws, "plant.sh"), script, 0o755)
	args := []string{"--yolo", door, "--cwd", ws, "--", "bash ./plant.sh"}
	if profile == "off" {
		args = append([]string{"--sandbox", "off"}, args...)
	}
	var id string
	ran := make(chan string, 1) // a foreground command's stderr once it returns
	if door == "start" {
		out, errOut, code := u.run(t, env, args...)
		if code != 0 {
			t.Fatalf("start: exit %d: %s", code, errOut)
		}
		id = strings.TrimSpace(out)
		t.Cleanup(func() { u.run(t, env, "kill", id) })
	} else {
		go func() {
			_, errOut, _ := u.run(t, env, args...)
			ran <- errOut
		}()
		t.Cleanup(func() {
			writeOwned(t, u, filepath.Join(ws, "go"), "", 0o644)
			os.WriteFile(filepath.Join(ws, "plant.sh"), nil, 0o644)
		})
	}
	config := filepath.Join(ws, "sub", ".git", "config")
	// The job has planted (the control), or what it planted was made
	// inert (a copy kept aside): waited for, not timed.
	planted := func() bool {
		if _, err := os.Stat(filepath.Join(ws, "planted")); err != nil {
			return false
		}
		if profile == "off" {
			return true
		}
		// Kept aside first, then removed from the configuration.
		kept, _ := filepath.Glob(config + ".runbox-quarantined-*")
		b, _ := os.ReadFile(config)
		return len(kept) > 0 && !strings.Contains(string(b), "fsmonitor")
	}
	waitFor(t, "the plant", planted)
	hostGit(t, u, home, ws, "status")
	if _, err := os.Stat(first); (err == nil) != (profile == "off") {
		t.Fatalf("the user's git status ran the planted program while the job ran: %v; want %v", err == nil, profile == "off")
	}
	if profile == "off" {
		if door == "run" {
			// The control's foreground command goes on to sleep: its
			// own timeout is not ours to wait for.
			pkill(t, ws)
		}
		return
	}
	writeOwned(t, u, filepath.Join(ws, "go"), "", 0o644)
	if door == "run" {
		select {
		case errOut := <-ran:
			if !strings.Contains(errOut, "stopped") {
				t.Errorf("the stopped command's result does not say why: %q", errOut)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the command that planted again was not stopped")
		}
		hostGit(t, u, home, ws, "status")
		if _, err := os.Stat(second); err == nil {
			t.Fatal("the user's git status ran the program planted again")
		}
		return
	}
	if _, errOut, _ := u.run(t, env, "wait", "--timeout", "100s", id); strings.Contains(errOut, "timed out") {
		t.Fatalf("the job that planted again was not stopped: %s", errOut)
	}
	hostGit(t, u, home, ws, "status")
	if _, err := os.Stat(second); err == nil {
		t.Fatal("the user's git status ran the program planted again")
	}
	ps, _, _ := u.run(t, env, "ps", "--json")
	var jobs []struct {
		ID         string
		Warning    string
		Violations []struct{ Op, Rule string } `json:"sandbox_violations"`
	}
	json.Unmarshal([]byte(ps), &jobs)
	for _, j := range jobs {
		if j.ID == id {
			if !strings.Contains(j.Warning, "stopped") || len(j.Violations) == 0 {
				t.Errorf("the stopped job's result does not say why: warning %q, violations %v", j.Warning, j.Violations)
			}
			return
		}
	}
	t.Fatalf("job %s not in ps --json: %s", id, ps)
}

// pkill kills the processes whose working directory is dir (the
// control's command, which nothing else stops).
func pkill(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitFor waits until cond holds, failing after a bound generous enough
// for a busy machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within two minutes", what)
		}
		time.Sleep(50 * time.Millisecond) // a file another process writes has no event to wait on here
	}
}
