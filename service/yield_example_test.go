package service_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
)

// A command given a yield time either ends within it, and its result
// comes back like a foreground one, or comes back with its output so far
// and carries on as one of the session's jobs. It needs the job daemon
// (runbox's, reached on its socket), so this example is compile-only.
func ExampleOwnedJobs_StartYield() {
	ctx := context.Background()
	svc, err := service.New(service.Options{Config: config.Default()})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close(ctx)
	ss, err := svc.NewSession(service.SessionOptions{Backend: "local"})
	if err != nil {
		log.Fatal(err)
	}
	jobs := ss.Jobs(&procregistry.Client{Path: "/path/to/the/daemon.sock"}, service.OwnedJobsOptions{HostAccess: true})

	res, err := jobs.StartYield(ctx, procregistry.StartRequest{Shell: "make test", Dir: "/src"}, 2*time.Second, 0)
	if err != nil {
		log.Fatal(err)
	}
	if res.Done {
		fmt.Printf("%s[exit %d]\n", res.Output, res.ExitCode())
		return
	}
	fmt.Printf("%s[still running as job %s]\n", res.Output, res.Job.ID)
	// Later: what it wrote since, waiting up to 10s for more or its end.
	more, err := jobs.PollYield(ctx, res.Job.ID, res.Next, 10*time.Second, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(more.Output)
}
