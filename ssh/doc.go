// Package ssh is the ssh backend: commands run on a remote host reached
// with golang.org/x/crypto/ssh (never the ssh client program), through
// the runbox agent on the far side.
//
// # One connection per environment
//
// An [Env] holds one authenticated TCP connection to the host. Every
// process is a session channel on it: the agent itself, the uploads, the
// probes; a command costs a round trip on the open connection, never a
// new handshake. Keepalive requests (Options.KeepaliveInterval) notice a
// silent peer; a connection that fails makes the running command fail at
// once with an error saying so, and the next command dials again, its
// Result marked EnvironmentRecreated (package remote does that part).
//
// # Authentication and host keys
//
// Keys come from the running ssh-agent (SSH_AUTH_SOCK) and from identity
// files (Options.Identity, else the alias's IdentityFile in ~/.ssh/config,
// else the default ~/.ssh/id_ed25519, id_ecdsa, id_rsa). An encrypted
// identity file is refused with a message that says to add it to the
// agent: this package never prompts for a passphrase.
//
// The host key is checked against known_hosts (Options.KnownHosts, else
// ~/.ssh/known_hosts). An unknown key or a changed one refuses the
// connection with a [HostKeyError] that carries the fingerprint and the
// file to edit. Options.AcceptNew records an unknown key in the file; it
// never accepts a changed one. There is no way to skip the check.
//
// # The agent on the far side
//
// The first connection's first session runs `uname -sm` and finds the
// user's cache directory (${XDG_CACHE_HOME:-$HOME/.cache}/runbox/agent),
// and stays open: it then answers whether the agent is there and, last,
// becomes the agent's own session (exec). A session is most of what a
// command costs over ssh, so a one-shot command on a host that has the
// agent costs one, as `ssh HOST true` does (lead.go says how).
//
// The agent is the small runbox-agent build for that architecture (see
// remote.Program.FindSmall), named by its SHA-256. It is uploaded through
// a session that writes its stdin to a temporary file, checked with
// sha256sum and renamed into place; a file of that name and size is then
// taken as this build without being read (CopyIn). A kept copy that does
// not start is checked and replaced once (remote.Recopier) before the
// agent is given up. The agent speaks the agent protocol on its stdin and
// stdout.
//
// # The runbox CLI on the far side
//
// Job commands run runbox itself on the host (its job daemon, and a relay
// to it for each call): a command whose argv[0] is [Env.CLIPath] gets the
// full static runbox CLI uploaded there first, next to the agent
// (Options.CLIBinary, else found or built). Its path does not name its
// content, so it is compared with sha256sum once per connection. Other
// commands never pay for it.
//
// # What it does not do
//
// It does not put a command's environment (where a caller's secrets go)
// in a remote argv or in a file on the remote: it travels with each
// command over the encrypted channel — in the agent protocol, or, in the
// fallback, on the command's stdin ahead of the command's own input.
// Of ~/.ssh/config (Options.SSHConfig) it reads only HostName, User,
// Port and IdentityFile for a host alias; the rest does not apply (see
// docs/ssh.md).
//
// # The fallback
//
// Where the agent cannot run (another OS or architecture, no sha256sum,
// no writable cache directory, Options.NoAgent), each command runs in a
// session channel of its own, visibly degraded: no session state, no
// streaming processes, no PTY, and a process-group kill instead of a
// whole-tree one.
package ssh
