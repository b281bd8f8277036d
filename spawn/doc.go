// Package spawn builds the environment of every child process runbox starts.
// It is the only place that does: each backend (local, docker, ssh, modal,
// daytona) passes what the child would otherwise inherit to [Build] and
// starts the child with [Result].Env and nothing else.
//
// # What Build does
//
// Given a [Request] — the inherited entries (Base), the command's own
// variables (Overlay), a [Policy], and the profile being served versus the
// profile runbox was launched with — Build returns the child's variables
// sorted by name, in this order of rules:
//
//  1. Always strip. Names on the always-strip list (see [AlwaysStrip], plus
//     [Policy].ExtraStrip) never reach a child: not from Base, not from
//     Overlay, not by Passthrough, not by a force key.
//  2. Runbox's own variables. Every inherited name that starts with
//     RUNBOX_ ([RunboxPrefix], in any case) is dropped from Base, even a
//     passed-through one: RUNBOX_STATE_DIR, RUNBOX_OWNER, RUNBOX_CONFIG,
//     RUNBOX_BACKEND, RUNBOX_SANDBOX and the rest configure runbox, not
//     the command, and would tell a command where runbox keeps its job
//     state and under which name. The documented exceptions are set by
//     runbox on purpose for one child, never inherited: an Overlay key
//     (runbox sets RUNBOX_KERNEL_TOOLS for a Python kernel, and a caller's
//     own --env RUNBOX_X=v) and RUNBOX_HOME when rule 3 pins it.
//  3. Launch-profile residue. When Served is a different profile from
//     Launch, every name the launch profile's env file defines is dropped
//     from Base, even a passed-through one: it belongs to the other profile.
//     When Served has a Home, HOME and RUNBOX_HOME ([HomeVar]) are pinned
//     to it.
//  4. Block. Names on the block list ([DefaultBlock], or [Policy].Block,
//     plus [Policy].ExtraBlock) are dropped unless [Policy].Passthrough
//     names them.
//  5. Virtualenvs. The markers of an active Python virtualenv or conda env
//     (VIRTUAL_ENV, VIRTUAL_ENV_PROMPT, PYTHONHOME, CONDA_PREFIX,
//     CONDA_PREFIX_n, CONDA_DEFAULT_ENV, CONDA_PROMPT_MODIFIER, CONDA_SHLVL,
//     PIPENV_ACTIVE, POETRY_ACTIVE) are dropped from Base, and the bin
//     directories of VIRTUAL_ENV and CONDA_PREFIX are removed from Base's
//     PATH: an agent's own venv is not the command's.
//  6. Overlay. The overlay wins over Base and over the defaults below, but
//     obeys rules 1 and 4. An overlay key RUNBOX_FORCE_NAME=value hands
//     NAME=value to the child on purpose, even when NAME is blocked — never
//     when it is always-stripped; that refusal is reported. No key starting
//     with RUNBOX_FORCE_ (in any case) ever reaches a child.
//  7. Quiet defaults. Unless the overlay sets them: PAGER, GIT_PAGER,
//     MANPAGER and SYSTEMD_PAGER are "cat"; EDITOR, VISUAL and GIT_EDITOR
//     are "true" (an editor that accepts the text unchanged, so `git commit`
//     without -m aborts at once instead of waiting for a human, and `git
//     merge` takes its default message); GIT_TERMINAL_PROMPT is "0";
//     DEBIAN_FRONTEND is "noninteractive". A child has no human at its
//     terminal, so anything that waits for one hangs until the timeout.
//  8. PATH. Entries are cleaned and de-duplicated (first wins); empty and
//     relative entries are dropped, since they search the working directory
//     (compare os/exec's ErrDot); the missing directories of [SystemPath]
//     are appended.
//
// [Result] also says what was dropped and why ([Drop], names only), which
// names were forced, and warnings for a human, so that runbox doctor and
// --json can show them. It never holds a value in an exported field that
// the child does not get.
//
// # Always strip versus block
//
// The always-strip list is for credentials that belong to runbox and the
// agent host rather than to the user's code, so no command has a reason to
// hold them: runbox's own tokens (RUNBOX_*TOKEN*, RUNBOX_*SECRET*,
// RUNBOX_*API_KEY*, RUNBOX_*PASSWORD*), the tokens of the cloud sandboxes
// runbox provisions (MODAL_TOKEN_*, DAYTONA_API_KEY, E2B_API_KEY, ...: a
// child holding one could create or tear down sandboxes, its own included),
// sudo secrets (SUDO_*PASS*, which covers SUDO_PASSWORD and the
// SUDO_ASKPASS helper), and the bot tokens of the chat platforms an agent
// talks through (SLACK_*TOKEN*, TELEGRAM_*TOKEN*, DISCORD_*TOKEN*, ...: a
// child holding one could speak as the agent). Configuration can add to this
// list and cannot remove from it.
//
// The block list is for credentials a user's own code may legitimately need
// — model providers (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), code hosts
// (GITHUB_TOKEN, GH_TOKEN), clouds (AWS_SECRET_ACCESS_KEY, ...), package
// registries (NPM_TOKEN, ...) — and for the name shapes that almost always
// carry a secret, bare or with a prefix: API_KEY, SECRET, TOKEN, PASSWORD,
// *_API_KEY, *_APIKEY, *_SECRET, *_SECRET_KEY, *_TOKEN, *_PASSWORD,
// *_PASSWD, *_PASS, *_PWD, *_PASSPHRASE, *_PRIVATE_KEY, *_JWT, and the
// databases' own (PGPASSWORD, MYSQL_PWD). They are dropped by default and handed over
// only by name, through Passthrough or a RUNBOX_FORCE_ key. Model-provider
// keys are blocked rather than always stripped for that reason: running the
// user's own script that calls a model is a normal thing to ask for.
//
// Lists are patterns in which '*' matches any run of characters. The strip
// and block lists ignore ASCII case (stripping too much is the safe error);
// Passthrough does not (passing too much is not).
//
// # Secrets and argv
//
// A secret value must never appear in a process's argv, where ps and
// /proc show it to every user. [Result.CheckArgv] reports an argv element
// that contains the value of any always-strip or blocked variable the build
// saw, dropped or passed, as an [*ArgvError] naming the variable. Backends
// call it before starting a process.
//
// # What spawn refuses to do
//
// Build never reads os.Environ() and never copies the calling process's
// environment: the caller passes Base explicitly, so a remote backend can
// pass the remote's environment and a test can pass a literal one. It never
// loads the served profile's env file into the child: secrets are handed
// over by name, not by file. It never puts a value into a [Drop], an error
// or a warning. It starts no process and keeps no state: there are no
// package-level variables other than constant tables, and every call to
// [DefaultPolicy], [AlwaysStrip], [DefaultBlock] or [SystemPath] returns a
// fresh slice.
//
// # Invariants callers may rely on
//
// For a nil error, [Result].Env is sorted by name with one entry per name;
// it contains no always-strip name and no RUNBOX_FORCE_ key (in any case);
// every RUNBOX_ name in it came from Overlay or is the pinned RUNBOX_HOME;
// its PATH is absolute-only, without duplicates, and contains every
// [SystemPath] directory (unless ExtraStrip strips PATH itself); and no name
// in [Result].Dropped is in Env.
package spawn
