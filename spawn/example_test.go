package spawn_test

import (
	"fmt"

	"github.com/runbox/runbox/spawn"
)

// The base would be os.Environ() in a local backend; spawn never reads it
// itself, so here it is a literal.
func ExampleBuild() {
	res, err := spawn.Build(spawn.Request{
		Base: []string{
			"PATH=/home/u/.venv/bin:/usr/bin:/usr/bin",
			"VIRTUAL_ENV=/home/u/.venv",
			"OPENAI_API_KEY=sk-from-the-agent",
			"GITHUB_TOKEN=ghp-passed-on-purpose",
			"RUNBOX_TOKEN=never-passed",
			"PAGER=less",
			"LANG=C.UTF-8",
		},
		Overlay: map[string]string{
			"RUNBOX_FORCE_HF_TOKEN": "hf-for-this-command",
			"EDITOR":                "nano",
		},
		Policy: spawn.Policy{Passthrough: []string{"GITHUB_TOKEN", "RUNBOX_TOKEN"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, kv := range res.Env {
		fmt.Println(kv)
	}
	for _, d := range res.Dropped {
		fmt.Println("dropped", d.Name, d.Reason)
	}
	fmt.Println("forced", res.Forced)
	fmt.Println(res.CheckArgv([]string{"git", "push", "https://x:ghp-passed-on-purpose@example.com/r"}))
	// Output:
	// DEBIAN_FRONTEND=noninteractive
	// EDITOR=nano
	// GITHUB_TOKEN=ghp-passed-on-purpose
	// GIT_EDITOR=true
	// GIT_PAGER=cat
	// GIT_TERMINAL_PROMPT=0
	// HF_TOKEN=hf-for-this-command
	// LANG=C.UTF-8
	// MANPAGER=cat
	// PAGER=cat
	// PATH=/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin
	// SYSTEMD_PAGER=cat
	// VISUAL=true
	// dropped OPENAI_API_KEY blocked
	// dropped RUNBOX_TOKEN always-strip
	// dropped VIRTUAL_ENV virtualenv
	// forced [HF_TOKEN]
	// spawn: argv[2] contains the value of GITHUB_TOKEN
}
