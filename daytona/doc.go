// Package daytona runs commands in Daytona sandboxes through the official
// Go SDK (github.com/daytonaio/daytona/libs/sdk-go).
//
// Daytona's toolbox has no byte stream to a process that the runbox agent
// could speak its protocol over (a session command's input is a JSON
// string per request, and its output comes back through a log websocket),
// so commands run through the toolbox's session API directly, under
// [remote.Env] with its agent turned off: the host still provisions,
// notices a lost sandbox and recreates it on the next command, and its
// capability report says what this way of running cannot do (no PTY, no
// session state, stdin relayed line by line, tree kill by an environment
// marker rather than a cgroup).
//
// Credentials (DAYTONA_API_KEY, or DAYTONA_JWT_TOKEN with
// DAYTONA_ORGANIZATION_ID; DAYTONA_API_URL or DAYTONA_SERVER_URL;
// DAYTONA_TARGET) are read by the caller from its launch environment and
// handed over in [Credentials]; they go to Daytona's API only, never into
// a sandbox.
package daytona
