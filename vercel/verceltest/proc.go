package verceltest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// killTree kills root, its process group and every process descended
// from it — commands the agent started in groups or sessions of their
// own included — as stopping a real sandbox's VM does. The tree is
// stopped before it is killed, so nothing forks away meanwhile.
func killTree(root int) {
	seen := map[int]bool{}
	for range 3 {
		fresh := false
		for _, p := range append([]int{root}, descendants(root)...) {
			if !seen[p] {
				seen[p], fresh = true, true
				syscall.Kill(p, syscall.SIGSTOP)
			}
		}
		if !fresh {
			break
		}
	}
	syscall.Kill(-root, syscall.SIGKILL)
	for p := range seen {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// descendants lists root's descendants by their parents in /proc.
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
