package testproc

import (
	"fmt"
	"os"
	"os/exec"
)

// AgentPackage is the small agent build that sandboxed backends deploy.
const AgentPackage = "github.com/runbox/runbox/cmd/runbox-agent"

// BuildAgent builds a static runbox-agent (CGO_ENABLED=0, -trimpath) at
// out, with any extra go build flags, for tests that deploy it into a
// sandbox. The error carries the compiler's output.
func BuildAgent(out string, flags ...string) error {
	args := append([]string{"build", "-trimpath"}, flags...)
	cmd := exec.Command("go", append(args, "-o", out, AgentPackage)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build test agent: %v: %s", err, b)
	}
	return nil
}
