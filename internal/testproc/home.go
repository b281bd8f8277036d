package testproc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// KillHome kills, with SIGKILL, every process of this machine whose
// environment has HOME at dir or below it. A fake cloud sandbox (a
// directory of this machine that is its processes' HOME) uses it to end
// as a real one does, with every process in it: a daemon that detached
// itself from the process group or tree the fake started (runbox's job
// daemon, the jobs it runs) included.
func KillHome(dir string) {
	dir = strings.TrimRight(dir, "/")
	if dir == "" {
		return // every HOME is under /: refuse rather than kill them all
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			home, ok := bytes.CutPrefix(kv, []byte("HOME="))
			if ok && (string(home) == dir || strings.HasPrefix(string(home), dir+"/")) {
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}
