package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/server"
)

// TestTools_ArgumentErrorsForPeople protects the messages of a call with
// bad arguments: each names the field, what was expected and what came,
// never the validator's internals (the SDK alone said "<invalid
// reflect.Value>" or "-5/1 is less than 0.000000").
func TestTools_ArgumentErrorsForPeople(t *testing.T) {
	srv, _ := newServer(t, nil)
	url := serveURL(t, srv, server.HTTPOptions{})
	cs := connectHTTP(t, url, http.DefaultClient, true, nil)
	cases := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"negative timeout", "terminal", map[string]any{"command": "true", "timeout": -5}, "invalid argument timeout: expected a number of at least 0, got -5"},
		{"missing command", "terminal", map[string]any{"timeout": 1}, "invalid argument command: required: expected a string"},
		{"command not a string", "terminal", map[string]any{"command": 5}, "invalid argument command: expected a string, got the number 5"},
		{"empty command", "check_command", map[string]any{"command": ""}, "invalid argument command: expected a non-empty string"},
		{"unknown argument", "terminal", map[string]any{"cmd": "ls"}, `unknown argument "cmd"; terminal takes background, command,`},
		{"pattern not a string", "terminal", map[string]any{"command": "true", "watch_patterns": []any{1}}, "invalid argument watch_patterns: item 0: expected a string, got the number 1"},
		{"unknown action", "process", map[string]any{"action": "frob"}, `invalid argument action: expected one of list, poll, log, wait, kill, write, submit, close, handoff, lifetime, got "frob"`},
		{"fractional limit", "process", map[string]any{"action": "log", "limit": 1.5}, "invalid argument limit: expected a whole number, got the number 1.5"},
		{"background not a bool", "terminal", map[string]any{"command": "true", "background": "yes"}, `invalid argument background: expected true or false, got the string "yes"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("protocol error: %v", err)
			}
			msg := text(res)
			if !res.IsError || !strings.Contains(msg, tc.want) {
				t.Errorf("%s %v: %q; want a tool error containing %q", tc.tool, tc.args, msg, tc.want)
			}
			for _, internal := range []string{"reflect", "/properties", "validating", "0.000000"} {
				if strings.Contains(msg, internal) {
					t.Errorf("the message shows the validator's internals (%s): %q", internal, msg)
				}
			}
		})
	}
	// A good call still runs.
	if out, _ := mustOK(t, cs, "terminal", map[string]any{"command": "echo ok", "timeout": 30}); out["output"] != "ok\n" {
		t.Errorf("a good call: %v", out)
	}
}
