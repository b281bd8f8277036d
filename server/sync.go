package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/workspace"
)

// SyncOptions tie a server's sessions to a task's workspace.
type SyncOptions struct {
	// Workspace describes the push: Task, Dir and StateDir are required;
	// Remote must be empty (the workspace is [workspace.DefaultRemote]).
	Workspace workspace.Options
}

// apply checks so and lays it over the server's options: the sessions'
// spec names the task and starts in the workspace.
func (so *SyncOptions) apply(o *Options) error {
	w := so.Workspace
	if w.Task == "" || w.Dir == "" || w.StateDir == "" || w.Remote != "" {
		return errors.New("server: Options.Sync needs Task, Dir and StateDir, and no Remote")
	}
	if p, err := o.Service.Providers().Lookup(o.Backend); err != nil || !p.TaskEnvs {
		return fmt.Errorf("server: sync needs a backend that keeps a task's environment between commands (docker, ...), not %q", o.Backend)
	}
	settings := maps.Clone(o.Spec.Settings)
	if settings == nil {
		settings = map[string]string{}
	}
	if settings["workspace"] != "" {
		return errors.New("server: sync and a mounted workspace: choose one")
	}
	settings[service.SettingTask] = w.Task
	o.Spec.Settings = settings
	if o.Spec.Dir == "" {
		o.Spec.Dir = workspace.DefaultRemote
	}
	return nil
}

// SyncArgs are the sync tool's arguments.
type SyncArgs struct {
	Action string `json:"action" jsonschema:"push: send what changed locally to the workspace now (done before every foreground command anyway); diff: what the workspace changed since the last push, as unified diffs"`
}

// SyncChange is one change in the sync tool's diff result.
type SyncChange = workspace.ChangeReport

// SyncResult is the sync tool's structured result.
type SyncResult struct {
	Task    string                `json:"task"`
	Push    *workspace.PushReport `json:"push,omitempty"`
	Changes []SyncChange          `json:"changes,omitempty"`
	// BaseLost, after a diff, says why the workspace is not the tree
	// last pushed: no deletion is inferred then.
	BaseLost string `json:"base_lost,omitempty"`
}

// sync pushes or diffs the session's workspace. Applying is left to a
// person (runbox sync apply): the point of the diff is that someone
// reviews what the sandbox did before it reaches their files.
func (s *Server) sync(ctx context.Context, req *mcp.CallToolRequest, in SyncArgs) (*mcp.CallToolResult, any, error) {
	sess, err := s.session(req)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := s.callContext(ctx)
	defer cancel()
	w := s.opts.Sync.Workspace
	out := SyncResult{Task: w.Task}
	switch in.Action {
	case "push":
		rep, err := s.pushWorkspace(ctx, sess)
		if err != nil {
			return s.failure(ctx, sess, "", err), nil, nil
		}
		out.Push = rep
		msg := fmt.Sprintf("pushed %d path(s), deleted %d, %d bytes (full: %v)", len(rep.Sent), len(rep.Deleted), rep.Bytes, rep.Full)
		if rep.Replaced != "" {
			msg += "; " + rep.Replaced
		}
		if rep.MovedAside != "" {
			msg += "; what it held is kept at " + rep.MovedAside
		}
		if len(rep.Conflicts) > 0 {
			msg += fmt.Sprintf("; kept the workspace's version of %d file(s) also changed locally: %s", len(rep.Conflicts), strings.Join(rep.Conflicts, ", "))
		}
		return result(msg, out), nil, nil
	case "diff":
		ss, err := sess.service()
		if err != nil {
			return s.failure(ctx, sess, "", err), nil, nil
		}
		env, err := ss.Env(ctx)
		if err != nil {
			return s.failure(ctx, sess, "", err), nil, nil
		}
		c, err := workspace.Compare(ctx, env, w.StateDir, w.Task)
		if err != nil {
			return s.failure(ctx, sess, "", err), nil, nil
		}
		var b strings.Builder
		out.Changes, out.BaseLost = c.Reports(), c.BaseLost
		if c.BaseLost != "" {
			b.WriteString(c.BaseLost + "\n")
		}
		for _, sc := range out.Changes {
			b.WriteString(sc.Diff)
		}
		if len(c.Changes) == 0 {
			b.WriteString("no changes since the last push")
		}
		return result(b.String(), out), nil, nil
	}
	return badArgs("action %q: want push or diff", in.Action), nil, nil
}

// pushWorkspace pushes the local directory to the session's workspace.
func (s *Server) pushWorkspace(ctx context.Context, sess *session) (*workspace.PushReport, error) {
	ss, err := sess.service()
	if err != nil {
		return nil, err
	}
	env, err := ss.Env(ctx)
	if err != nil {
		return nil, err
	}
	return workspace.Push(ctx, env, s.opts.Sync.Workspace)
}
