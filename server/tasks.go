package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// TasksArgs are the tasks tool's arguments.
type TasksArgs struct {
	Action  string `json:"action" jsonschema:"list: every task --task keeps between runs, on every backend; rm: remove one task everywhere it lives (or on backend)"`
	Task    string `json:"task,omitempty" jsonschema:"rm: the task to remove. Required for rm"`
	Backend string `json:"backend,omitempty" jsonschema:"rm: remove the task only on this backend (docker, modal, kubernetes, local, daytona, ssh)"`
}

// TasksRemoved is the tasks tool's structured result for rm.
type TasksRemoved struct {
	Task string `json:"task"`
	service.TaskRemoval
}

// addTasksTool registers the tasks tool: the same listing and removal as
// `runbox tasks` and `runbox tasks rm`.
func (s *Server) addTasksTool() error {
	sc, err := schemaFor[TasksArgs](func(p map[string]*jsonschema.Schema) {
		p["action"].Enum = []any{"list", "rm"}
	})
	if err != nil {
		return err
	}
	s.schemas["tasks"] = sc
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "tasks",
		Title: "List or remove kept tasks",
		Description: "list: the tasks runbox keeps between runs (a docker container kept running, a modal snapshot, a daytona sandbox, " +
			"a directory on an ssh host) with backend, age, last use, size where known and what holds each; backends whose tasks " +
			"cannot be listed are named with the reason. rm: remove one task everywhere it lives, killing what runs in it.",
		InputSchema: sc,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)},
	}, sessionTool(s, (*Server).runTasks))
	return nil
}

func (s *Server) runTasks(ctx context.Context, sess *session, in TasksArgs) *mcp.CallToolResult {
	switch in.Action {
	case "list":
		list := s.svc.Tasks(ctx)
		return result(tasksText(list, time.Now()), list)
	case "rm":
		if in.Task == "" {
			return badArgs("rm needs task")
		}
		// The server's own task holds every session's environment: it
		// is not the server's to pull away from under them.
		if own := s.opts.Spec.Settings[service.SettingTask]; own == in.Task {
			return s.failure(ctx, sess, "", fmt.Errorf("runbox: task %s is the one this server's sessions run in; remove it once the server has stopped (runbox tasks rm %s): %w", in.Task, in.Task, envs.ErrBadCommand))
		}
		removal, err := s.svc.RemoveTask(ctx, in.Task, in.Backend)
		if err != nil {
			return s.failure(ctx, sess, "", err)
		}
		text := fmt.Sprintf("removed %s: %s", in.Task, strings.Join(removal.Removed, ", "))
		for _, u := range removal.Unavailable {
			text += fmt.Sprintf("\n%s could not be asked (%s): the task may still be there", u.Backend, u.Detail)
		}
		return result(text, TasksRemoved{Task: in.Task, TaskRemoval: removal})
	default:
		return badArgs("action must be list or rm, not %q", in.Action)
	}
}

// tasksText is the listing for people: one line per task, then the
// backends that could not be listed.
func tasksText(list service.TaskList, now time.Time) string {
	var b strings.Builder
	if len(list.Tasks) == 0 {
		b.WriteString("no tasks")
	}
	for i, t := range list.Tasks {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s (%s): %s", t.Name, t.Backend, t.Holds)
		if !t.LastUsed.IsZero() {
			fmt.Fprintf(&b, ", last used %s ago", now.Sub(t.LastUsed).Round(time.Second))
		}
		if t.SizeBytes != nil {
			fmt.Fprintf(&b, ", %d bytes", *t.SizeBytes)
		}
		if t.Busy != "" {
			fmt.Fprintf(&b, ", in use: %s", t.Busy)
		}
	}
	for _, bk := range list.Backends {
		if bk.State != service.TasksListed {
			fmt.Fprintf(&b, "\n%s: %s: %s", bk.Backend, bk.State, bk.Detail)
		}
	}
	return b.String()
}
