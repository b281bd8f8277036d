// Package approval is runbox's command gate: it decides whether a shell
// command may run, must first be approved by a human, or must never run.
// Every command from the CLI, the server or the library's runner passes a
// [Gate] before any backend sees it.
//
// The gate decides; it never runs anything. It does not execute the
// command, expand variables, read the files a command names or consult the
// environment: it judges the text, and where the text does not say (a
// command word held in a variable, code fetched at run time) it asks
// rather than guesses.
//
// # How a command is judged
//
//  1. The text is normalised: the gate removes what a terminal hides or a shell ignores: ANSI
//     and C1 escape sequences, NUL and other control bytes, compatibility
//     forms (fullwidth "ｒｍ" is "rm"), backslash-newline continuations,
//     and $IFS used as a space.
//  2. The text is parsed as bash by mvdan.cc/sh/v3/syntax, and every simple
//     command is visited wherever it stands: lists, pipelines, subshells,
//     blocks, if/for/while/case bodies, function bodies, command and process
//     substitutions. Code given as a string is parsed and judged in turn:
//     bash|sh|zsh … -c, eval, env -S, su -c, watch, trap, alias, ssh host
//     CMD, here-documents and here-strings fed to a shell, text echoed or
//     printed into a shell, text written to a file that is then run, the
//     commands git runs from its configuration and options (an alias with
//     "!", core.pager, core.sshCommand, --upload-pack, rebase --exec …)
//     and the values of variables that name a command (GIT_SSH_COMMAND,
//     GIT_PAGER, PAGER, EDITOR …). Programs that run a command handed to
//     them in a form of their own are read the same way (walk's runners.go): GNU
//     parallel with its inputs put in, tmux and screen sessions and the
//     keys they are sent, at, batch and crontab with what they install
//     (a crontab's schedule dropped), debuggers' and editors' commands
//     (gdb -ex shell, vim -c '!…', emacs --eval (shell-command …)), the
//     "run this" options of tar, rsync, zip, man, ssh and scp, sed's e
//     command, package runners (npx, uvx, pnpm dlx …, with rimraf judged
//     as rm -r) and make, which runs a makefile written earlier in the
//     line; parallel --pipe into a shell and source /dev/stdin run their
//     input as code; docker, podman and nerdctl exec, kubectl, oc, lxc
//     and incus exec … -- and systemd-nspawn run their command as ssh
//     HOST CMD does. What such a program runs out of the gate's sight
//     (at -f FILE, crontab FILE, core.hooksPath, a makefile from a pipe,
//     scp -S naming a program that is not ssh, Lisp or Python a tool
//     evaluates) is the fact "@runs-hidden", which asks. Data stores'
//     clients are read the same way (walk's flows.go): text redis-cli or mongosh
//     is fed is judged as the command it holds, SQL options are found
//     wherever they stand, and statements the gate cannot read (a file,
//     a pipe from another program, a variable) are "@store-hidden".
//  3. Each command is resolved to the program that really runs: quotes and
//     escapes are removed (\rm, "rm", $'\x72m'), brace expressions expanded,
//     wrappers looked through (sudo, doas, env, nice, nohup, setsid, time,
//     timeout, stdbuf, command, builtin, exec, busybox, xargs, find -exec,
//     watch, flock, chroot, ionice, strace …), paths reduced to the base
//     name, and tools with subcommands split (git -C dir push, docker -H
//     host stop); the subcommand is the first known one, so a run of
//     options the gate does not know cannot hide it. A program is matched
//     by its whole name: mkfs_helper is not mkfs. Every program that runs
//     a command counts toward one bound on nesting, whichever way it runs
//     it: a wrapper, find -exec, -execdir, -ok, fd -x, or a shell, eval or
//     ssh given code. The gate reads through 32 of them; what lies past
//     that asks.
//  4. A table of rules is matched against the resolved commands
//     and against facts the walker derives from the script's shape: writes
//     to files (>, tee, cp, sed -i, dd of=), SQL statements, pipes into a
//     shell, inline interpreter code, fork bombs, loops without end that
//     start a process each turn ("@spawn-loop"), and each file a line
//     reads (cat, base64, < FILE …) paired with what the same line sends
//     it to or writes ("@leak": cat ~/.ssh/id_rsa | curl -d @- …), whose
//     rules say which files are credentials. The same view pairs the
//     line's other sources of secrets with its network sinks, however
//     they are joined (a pipe, $(…), <(…), a here-string, a temporary
//     file, > /dev/tcp/…): environment dumps (env, printenv, set,
//     export -p), variables named as secrets that are echoed, and
//     credential helpers and secret stores (git credential fill, gh auth
//     token, aws configure export-credentials, gcloud auth
//     print-access-token, docker-credential-* …). Other facts say a
//     redirection only empties its target ("@empties": : > app.db), a
//     download is unpacked into the tree ("@fetch-extract": curl … | tar
//     x) and a package runner fetches what it runs from a URL or a git
//     repository ("@runs-remote": npx github:x/y). Every rule carries
//     its own examples, which the tests run.
//
// Prose is not code: words that are only arguments (echo "rm -rf /", git
// commit -m "…", grep 'shutdown') never trigger a rule; the same words fed
// to a shell do.
//
// # Effects beyond the machine
//
// Knowledge of programs and their verbs (rules_remote.go in rules) names what
// reaches past the machine, where no sandbox holds it: packages published,
// retracted or re-tagged (npm publish, cargo yank, twine upload, gem push,
// docker push …), repositories, releases, secrets, buckets, clusters,
// stacks and zones deleted through forge and cloud CLIs (gh, glab, aws,
// gcloud, az, terraform, pulumi, helm, kubectl …), installs from a URL, a
// VCS link or an index of one's own (pip install git+https://…, npm
// install URL, go install MODULE@VERSION, curl … | tar x), daemons driven
// through their unix sockets (curl --unix-socket /var/run/docker.sock,
// busctl call), recursive changes of ownership or permissions of a whole
// project or home tree, data files emptied (truncate -s 0 app.db, : >
// app.db), a repository pointed elsewhere (.git/commondir, gitdir: files,
// core.worktree, url.*.insteadOf) and package caches rewritten (under
// ~/go/pkg/mod, site-packages, node_modules). Each reason names the
// family and the remote effect ("publishes a package to a public
// registry …"). The ordinary neighbours (npm pack, gh repo view, aws s3
// ls, pip install -r requirements.txt, env | grep PATH, kubectl get,
// terraform plan) run.
//
// Removing build artefacts (node_modules, dist, build, target,
// __pycache__, .venv …, or anything under one) is allowed in every
// sandbox profile and with none, when the request's directory is known
// and every path the delete names resolves under it, followed through cd
// as the workspace profile follows it (artefacts.go): rm -rf ~, /, ..,
// a path that leaves the directory and a delete in a directory the gate
// cannot follow still ask.
//
// # The rule index
//
// A command is tested only against the rules that can match its name. The
// index is derived from each rule's Command pattern when the table is
// compiled, so a new rule needs nothing but its definition: a pattern
// that matches a finite set of whole names (^(rm|srm)$) files the rule
// under each name; a pattern anchored at the start (^mkfs(\.[a-z0-9]+)?)
// under each byte a matching name can start with; any other rule (no
// Command, as in rules on the environment alone, or an unanchored
// pattern) is a catch-all, tested against every command. A name's list is
// its own rules, its first byte's and the catch-all, in table order, less
// the rules whose name tests (Command, NotCommand) turn the name away.
// Each pattern is also preceded by a test of text every match must
// contain ("--force", "169.254.169.254"), derived from the expression, or
// is a set lookup when it matches a finite set of whole strings. The index
// and these tests only skip rules and expressions that could not match:
// the verdicts are those of testing every rule, which the tests check.
//
// # Tiers and decisions
//
// A hardline rule (recursive delete of / or a system or home directory,
// recursive permission or ownership changes of / or a core system
// directory, rsync --delete into one, deleting or locking the root
// account, mkfs, writes onto a raw block device, fork bombs, kill -1,
// shutdown and reboot …) denies the command, and nothing changes that: no
// [Mode], allow list, approval or yolo switch. A forbidden rule (sudo -S)
// denies without asking; only an allow-list entry naming the rule lets it
// through. A dangerous rule asks: [Gate.Check] returns [Ask], and [Gate.Decide] asks
// through an [Asker] such as a [Broker].
//
// Every reason a rule gives ends with its id in brackets ("… [rm-root]"),
// so a refusal or a question names the rule an allow or deny list can
// name. A hardline verdict gives the hardline rules' reasons only, and the
// write to runbox's policy only when no wider hardline rule explains it
// (rm -rf ~ is the delete of a home directory).
//
// The gate fails closed. Input it cannot parse, input beyond its bounds of
// size and nesting, and a command word it cannot know ($CMD -rf /,
// $(…) args) ask rather than allow. Input beyond the bounds asks in every
// mode, relaxed sandboxes and session approvals included: what the gate
// could not read through is not let through unread (only Options.Yolo,
// the user's choice to be asked nothing, lets it through as it does any
// other ask), and the reason says which bound
// ("command too deeply nested to analyse (depth 12001 > limit 100)",
// "command wrapped too deeply to analyse …"). What it read before the
// bound still counts: a hardline command there is denied.
//
// A check does a bounded amount of work: the size bound
// ([Options.MaxCommandBytes]) is checked first, nesting and the length of
// pipelines and lists are measured by one cheap pass over the text before
// the parser runs, every later stage is linear in its input, and the code
// parsed in one check (strings run as code, files written and run) is
// bounded by a multiple of the command. Chains of programs that run
// commands do not go over the rest of the line once per level: when the
// command a find -exec runs runs another in turn (find . -exec sudo rm …,
// -exec find …), find keeps only its name among its own arguments, and
// eval, watch, sg and ssh HOST given words the shell reads back as
// themselves run them as a wrapper would, without parsing them again. A
// command at the size bound takes milliseconds; typical commands take a
// few microseconds.
//
// # Protected paths
//
// [Options].Protect names files and directories that commands must not
// change, such as the gate's own configuration and runbox's state
// ([DefaultProtection]); the file approvals are saved to is always one.
// Every write the walker can see (redirections, tee, cp, mv, ln, rm,
// sed -i, dd of=, chmod, tar -x, find -delete, editors …) is resolved the
// way the shell would resolve it, through ~, variables, cd, ".." and
// globs, and a write to a path that holds policy is hardline. Reading
// stays allowed. What cannot be resolved is judged by its tail. A link
// (ln, ln -s, cp -s, cp -l) made to a protected path, in a known
// directory or not, is protected in turn for the rest of the command;
// find … | xargs of a program that changes files reaches all under find's
// start points, as find -exec does, and the names echo, printf or ls feed
// it are its targets; a git command that writes a work tree named apart
// (--work-tree, GIT_WORK_TREE, -C, clone's target) writes that directory.
//
// # Policy
//
// [Options] set the policy once, when [New] builds the Gate: [ModeManual]
// (the zero value) asks, [ModeOff] does not; Options.Yolo lets dangerous
// commands through and can only be set there; Allow and Deny lists hold
// rule ids or globs; ConfigFile holds approvals saved with "always". Per
// request, [Request.Unattended] turns every ask into a denial with a hint
// saying how to allow it, and [Request.Sandboxed] lets
// Options.RelaxSandboxed relax the ask tier for backends without host
// access. Session approvals are remembered per [Request.SessionKey].
//
// # Sandbox profiles
//
// [Request.Sandbox] tells the gate the kernel confinement a local command
// will run under ([Sandbox]). Under the workspace and read-only profiles a
// command that writes where the kernel will not let it, or reads what it
// hides, is denied with the sandbox named in the reason; under workspace
// a delete or overwrite whose every target resolves inside the writable
// roots (rm -rf build, git clean -fdx, find . -name '*.o' -delete) is
// allowed without asking. What the gate cannot resolve is not relaxed;
// hardline, forbidden and deny rules and the limits hold in every profile.
//
// # Approvals
//
// A [Broker] holds pending requests with ids until they are answered —
// once, for the session, always, or denied with a reason — through a
// [Prompter] (the [TerminalPrompter] for the CLI) or through
// [Broker.Answer] and [Broker.ApproveAllPending] (for a server). Every
// front end words the question with [Question]: runbox's words (rule ids,
// reasons) first, then the command on one line of its own with control,
// bidirectional and invisible characters escaped (\n, \x1b, \u202e) and
// its length bounded, the cut said, so a command cannot pass for
// runbox's words or hide what it runs. Identical
// concurrent requests share one prompt. An unanswered request is denied
// after [DefaultTimeout]. A Broker owns the goroutines it starts and
// [Broker.Close] stops them.
//
// A Gate and a Broker hold no package-level state: build as many as you
// need. The rule table is a constant, compiled once per process.
//
// # Packages
//
// This package is the gate's public face: the [Gate] and its policy,
// verdicts, sandboxes, the [Broker] and the saved approvals. What lies
// beneath is internal and may change: internal/walk reads a command line
// into programs and facts, internal/rules holds the rule table and
// matches it, and internal/shell holds the shell text and words both
// build on. Imports point one way: approval → walk → rules → shell.
package approval
