// Command testagent is what the docker tests copy into containers: the
// local backend served over stdin/stdout by package agent, exactly as
// `runbox agent` does, without the CLI around it (so the tests do not
// depend on how cmd/runbox is wired). Arguments are ignored.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/runbox/runbox/agent"
	"github.com/runbox/runbox/local"
)

func main() {
	env, err := local.New(local.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	srv := agent.NewServer(env, agent.ServerOptions{})
	err = srv.Serve(context.Background(), agent.Stdio(os.Stdin, os.Stdout))
	env.Close(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
