package ssh

import (
	"errors"
	"testing"

	"github.com/runbox/runbox/envs"
)

// TestParseTarget_Forms: every spelling of a host users type gives the
// user, host and port they meant; what is not a host is a usage error,
// never a connection to somewhere else.
func TestParseTarget_Forms(t *testing.T) {
	tests := []struct {
		in, user string
		port     int
		want     target
		bad      bool
	}{
		{in: "build1", user: "me", want: target{"me", "build1", 22}},
		{in: "alice@build1", user: "me", want: target{"alice", "build1", 22}},
		{in: "build1:2222", user: "me", want: target{"me", "build1", 2222}},
		{in: "alice@build1:2222", want: target{"alice", "build1", 2222}},
		{in: "build1", user: "bob", port: 2200, want: target{"bob", "build1", 2200}},
		{in: "alice@[::1]:2222", want: target{"alice", "::1", 2222}},
		{in: "alice@[::1]", want: target{"alice", "::1", 22}},
		{in: "a@b@build1", want: target{"a@b", "build1", 22}},
		{in: "", bad: true},
		{in: "@build1", bad: true},
		{in: "build1:", bad: true},
		{in: "build1:0", bad: true},
		{in: "build1:99999", bad: true},
		{in: "build1:ssh", bad: true},
		{in: "alice@:22", bad: true},
	}
	for _, tc := range tests {
		got, err := parseTarget(tc.in, tc.user, tc.port)
		if tc.bad {
			if !errors.Is(err, envs.ErrBadCommand) {
				t.Errorf("parseTarget(%q) = %v, %v; want a usage error", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseTarget(%q, %q, %d) = %+v, %v; want %+v", tc.in, tc.user, tc.port, got, err, tc.want)
		}
	}
}
