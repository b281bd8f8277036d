package local_test

import (
	"context"
	"fmt"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
)

// Session state carries from one command to the next.
func Example() {
	ctx := context.Background()
	env, err := local.New(local.Options{Dir: "/"})
	if err != nil {
		panic(err)
	}
	defer env.Close(ctx)

	env.Run(ctx, envs.Command{Shell: "cd /tmp && export GREETING=hello"})
	res, _ := env.Run(ctx, envs.Command{Shell: `echo "$GREETING from $(pwd)"; exit 3`})
	fmt.Print(res.Output)
	fmt.Println("exit code:", res.Code)
	// Output:
	// hello from /tmp
	// exit code: 3
}
