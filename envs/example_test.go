package envs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// Running a command through a provider table, as the CLI does.
func Example() {
	ctx := context.Background()
	table := envs.NewProviders()
	table.Register(envs.Provider{
		Name: "local",
		New: func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
			return local.New(local.Options{Confine: confine.Off(), Dir: spec.Dir})
		},
	})
	env, err := table.Open(ctx, "local", envs.Spec{Dir: "/"})
	if err != nil {
		panic(err)
	}
	defer env.Close(ctx)

	res, err := env.Run(ctx, envs.Command{Shell: "echo hello; exit 3"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q exit=%d\n", res.Output, res.Code)

	var exit *envs.ExitError
	fmt.Println(errors.As(res.Err(), &exit), exit.Code)

	_, err = table.Open(ctx, "lcoal", envs.Spec{})
	fmt.Println(err)
	// Output:
	// "hello\n" exit=3
	// true 3
	// envs: unknown backend "lcoal" (known: local)
}

// A timeout kills the command's whole tree and is reported in fields.
func ExampleCommand_timeout() {
	ctx := context.Background()
	env, _ := local.New(local.Options{Confine: confine.Off()})
	defer env.Close(ctx)
	res, _ := env.Run(ctx, envs.Command{Shell: "sleep 30", Timeout: 200 * time.Millisecond})
	fmt.Println(res.Code, res.TimedOut, res.KilledBy)
	// Output: 124 true timeout
}

// Output over the limit keeps its head and tail, with one notice between.
func ExampleCapture() {
	c := envs.NewCapture(10, "")
	c.Write([]byte(strings.Repeat("a", 20) + strings.Repeat("z", 20)))
	defer os.Remove(c.SpillPath()) // the full stream was spilled to this file
	defer c.Close()
	out := string(c.Bytes())
	fmt.Println(out[:4], c.Truncated(), c.Total())
	fmt.Println(out[len(out)-6:])
	// Output:
	// aaaa true 40
	// zzzzzz
}
