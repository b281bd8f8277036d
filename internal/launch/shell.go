package launch

import (
	"fmt"
	"os/exec"

	"github.com/runbox/runbox/envs"
)

// Shell is the path of the shell that runs shell-string commands: want
// when it is set (a name looked up on PATH, or a path), else bash, else
// sh. bash comes first because it can save and restore a whole session
// (functions and aliases as well as exports); sh is the fallback every
// POSIX system has. No shell at all matches envs.ErrNotFound.
func Shell(want string) (string, error) {
	if want != "" {
		p, err := exec.LookPath(want)
		if err != nil {
			return "", fmt.Errorf("launch: shell %q: %w", want, err)
		}
		return p, nil
	}
	for _, s := range []string{"bash", "sh"} {
		if p, err := exec.LookPath(s); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("launch: no bash or sh on PATH: %w", envs.ErrNotFound)
}
