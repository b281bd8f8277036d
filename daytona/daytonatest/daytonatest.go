// Package daytonatest gives tests outside package daytona the loopback
// Daytona that daytona's own tests use: a control plane and toolbox that
// the official SDK talks to, every sandbox a directory on this machine and
// every command a real process in it (the toolbox's PTY sessions on real
// terminals). It is what lets a test drive a daytona session end to end
// through runbox's service and server without an account.
package daytonatest

import "github.com/runbox/runbox/daytona/internal/fake"

// Server is the fake Daytona. Its APIURL goes to DAYTONA_API_URL and its
// Key to DAYTONA_API_KEY; Close stops it and every process it started.
type Server = fake.Server

// Sandbox describes one sandbox as the fake holds it (Server.Sandboxes).
type Sandbox = fake.Sandbox

// New starts a fake Daytona that accepts key, with its sandboxes'
// directories under root (keep it short: a job daemon's socket lives
// under a sandbox's directory).
func New(key, root string) *Server { return fake.New(key, root) }
