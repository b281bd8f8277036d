// Package workspace copies a local project into a sandbox and brings the
// sandbox's changes back without losing anybody's edits.
//
// # Push
//
// [Push] sends a local directory to a directory in an environment (by
// default [DefaultRemote]). Trees move as tar streams: through the
// environment's [envs.TreeTransfer] when it has one (docker's archive
// API), else through tar run inside it. The first push of a task is one
// stream; later pushes send only what changed since the
// last one (found by size and modification time, confirmed by a SHA-256
// of the content) and delete in the sandbox what was deleted locally.
// .git/ and the paths the project's .gitignore files name are skipped
// unless [Options] says otherwise — decided as git decides it: git's own
// wildmatch algorithm and line rules (escaped trailing spaces, bracket
// expressions, negation, '**', anchored and directory-only patterns),
// held to `git check-ignore` by TestPush_GitignoreAsGit and
// FuzzScan_GitignoreAsGit; a pattern git cannot use matches nothing. Symbolic links are sent as links and
// never followed; a link that is absolute or leads out of the tree is not
// sent at all. Every entry carries its local modification time (to the
// nanosecond), so a build in the sandbox sees a pushed edit as newer
// than what it built from the old file. What was pushed (path → type, mode, hash) is the task's
// manifest, kept in runbox's state directory and written only when the
// whole push succeeded, so a failed transfer leaves the last good base.
//
// A manifest is the base of one tree only: each full push writes
// [MarkerName] into the sandbox's directory with a fresh identity the
// manifest keeps. A directory without it (a container made again, an
// image changed, a directory emptied) gets a full push, and what it held
// is moved aside in the sandbox, never deleted; a comparison with it has
// no base ([Comparison.BaseLost]), so nothing is taken for a deletion.
//
// # Pull
//
// [Compare] is a three-way comparison: base is the manifest, theirs is
// the sandbox's tree now, ours is the local tree now. A path changed only
// in the sandbox is a [Change] to bring back; one changed only locally is
// left alone; one changed on both sides (differently) is a conflict.
// [Change.Diff] renders a change as a git-style unified diff that
// `patch -p1` and `git apply` accept.
//
// # Apply
//
// [Comparison.Apply] writes the selected changes into the local
// directory. It refuses conflicts unless told to take the sandbox's side,
// and it never writes:
//   - outside the local directory: names that are absolute or hold ".."
//     are refused, and every write goes through an [os.Root], so a
//     symbolic link (planted by the sandbox or not) cannot lead out;
//   - through a symbolic link: every parent of a written path must be a
//     real directory here and must not be made a link or a file by the
//     same apply;
//   - a symbolic link that, once every link on its way is followed (the
//     link's own chain, links already here, links the same apply makes),
//     resolves out of the tree, does not resolve, or reaches a path
//     refused by name; nor a change that makes a link already here lead
//     out ([ErrUnsafePath]: the whole apply is refused);
//   - a path git, a hook manager or a shell here would act on
//     ([ErrRefused], [Change.Refused] says which): any element named .git
//     in any spelling a file system takes for it (".GIT", ".git.",
//     "git~1", HFS+ ignorable code points), .gitmodules, .gitattributes,
//     .gitconfig, .lfsconfig, hook managers' files (.husky/, .githooks/,
//     lefthook, pre-commit, overcommit), .envrc and shell start-up files
//     (.profile, .bashrc, .zshrc, ...), the directory the project's
//     .git/config names in core.hooksPath, and anything in a directory
//     git would take for a repository (HEAD beside objects/ or refs/);
//     these are skipped and reported, the rest is applied;
//   - a set-user-ID, set-group-ID, sticky or world-writable mode: a file
//     keeps its other permission bits;
//   - a path on the protected list ([DefaultProtected]: .git/, .env*,
//     runbox's configuration);
//   - anything at all when the sandbox's tree is above the size limit.
//
// [Compare] already marks the refused changes, so a review shows them with
// their reason before anything is applied.
//
// Each file is written to a temporary name beside it and renamed over the
// target, so a reader never sees half a file; every change is checked
// before the first one is written.
//
// What it does not do: merge. A conflict is reported with both sides'
// diffs against the base and left for a person (or --theirs) to settle.
// A push holds back a file that changed locally when the sandbox changed
// it too (its hash there is checked first): neither edit is lost, and the
// comparison shows a conflict. It does not check links that way. The
// names refused are those git and shells act on by themselves; a program
// that a project's own files configure otherwise (an editor's task file,
// a build tool's plugin, a package's install script) is for the review to
// catch.
package workspace
