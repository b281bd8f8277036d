package seal_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/runbox/runbox/internal/seal"
	"github.com/runbox/runbox/spawn"
)

// The test binary plays a sealed runbox process when SEAL_HELPER is set:
// it seals itself, prints the digest of what its Launch holds for
// OPENAI_API_KEY and its own PID, optionally hands its secrets to a child
// copy of itself, and waits for stdin to close.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SEAL_HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

func helper(mode string) int {
	l := seal.Process(spawn.DefaultPolicy())
	fmt.Printf("pid=%d key=%s goenv=%q warnings=%d\n", os.Getpid(), digest(l.Getenv("OPENAI_API_KEY")), os.Getenv("OPENAI_API_KEY"), len(l.Warnings()))
	if mode == "hand" {
		cmd := exec.Command(os.Args[0])
		done, err := l.Hand(cmd, "SEAL_HELPER=child")
		if err != nil {
			fmt.Println("hand:", err)
			return 1
		}
		cmd.Stdin = os.Stdin
		cmd.Stdout = os.Stdout
		err = cmd.Start()
		done()
		if err != nil {
			fmt.Println("start:", err)
			return 1
		}
		cmd.Wait()
		return 0
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// TestProcess_SecretsNotVisibleInProc protects the promise that a child
// reading /proc/$PPID/environ or cmdline finds no withheld value, while
// the sealed process itself still has it, and hands it to a runbox child
// without putting it in that child's environ.
func TestProcess_SecretsNotVisibleInProc(t *testing.T) {
	secret := "sk-test-" + strconv.Itoa(os.Getpid()) + "-a1b2c3d4e5"
	cmdSecret := "ghp_" + strconv.Itoa(os.Getpid()) + "zzzyyyxxx"
	for _, mode := range []string{"plain", "hand"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "--token="+cmdSecret, "-test.run=none")
			cmd.Env = append(os.Environ(), "SEAL_HELPER="+mode, "OPENAI_API_KEY="+secret, "GITHUB_TOKEN="+cmdSecret, "SEAL_MARK=visible")
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { in.Close(); cmd.Wait() })
			r := bufio.NewReader(out)
			lines := 1
			if mode == "hand" {
				lines = 2
			}
			for i := 0; i < lines; i++ {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("helper line %d: %v", i, err)
				}
				var pid int
				var key, goenv string
				var warnings int
				if _, err := fmt.Sscanf(line, "pid=%d key=%s goenv=%q warnings=%d", &pid, &key, &goenv, &warnings); err != nil {
					t.Fatalf("helper said %q: %v", line, err)
				}
				if key != digest(secret) {
					t.Errorf("process %d: Launch.Getenv(OPENAI_API_KEY) lost the value", i)
				}
				if goenv != "" {
					t.Errorf("process %d: os.Getenv(OPENAI_API_KEY) = %q after sealing; want empty", i, goenv)
				}
				if warnings != 0 {
					t.Errorf("process %d: %d sealing warnings", i, warnings)
				}
				for _, f := range []string{"environ", "cmdline"} {
					b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
					if err != nil {
						t.Fatalf("read %s of %d: %v", f, pid, err)
					}
					for _, s := range []string{secret, cmdSecret} {
						if strings.Contains(string(b), s) {
							t.Errorf("process %d: /proc/%d/%s shows a secret value", i, pid, f)
						}
					}
					if f == "environ" && !strings.Contains(string(b), "SEAL_MARK=visible") {
						t.Errorf("process %d: environ lost the non-secret SEAL_MARK", i)
					}
				}
			}
		})
	}
}

func ExampleLaunch_Redact() {
	os.Setenv("EXAMPLE_API_KEY", "abcdef123456")
	defer os.Unsetenv("EXAMPLE_API_KEY")
	l := seal.Process(spawn.DefaultPolicy())
	text, names := l.Redact("curl -H 'Authorization: abcdef123456' https://example.com")
	fmt.Println(text)
	fmt.Println(names)
	// Output:
	// curl -H 'Authorization: [EXAMPLE_API_KEY]' https://example.com
	// [EXAMPLE_API_KEY]
}
