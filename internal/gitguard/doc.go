// Package gitguard finds what a confined command left in a workspace that
// would turn the user's own git against them, and makes it inert.
//
// A sandbox stops a command from acting now; git acts later, for the
// user, outside any sandbox. A command allowed to write its workspace can
// write a hook, a core.fsmonitor or core.pager setting, an include, a
// commondir or gitdir file pointing at a configuration of its own, or a
// whole nested repository (git init sub, or sub/.git planted beside
// tracked files) that the user's next git status, diff or commit in that
// directory reads and runs. Landlock cannot take files out of a writable
// tree by name, and git needs .git itself writable (index.lock,
// COMMIT_EDITMSG), so prevention alone cannot cover it.
//
// [Check] runs while a confined command (or background job) runs, every
// few hundred milliseconds with a [Tree] that makes a quiet check cheap,
// and once more when it has ended and its leftovers are gone; the callers
// stop a command that plants a file again after it was made inert. It walks the workspace for .git directories,
// files and links, follows gitdir and commondir pointers, submodules'
// git directories (.git/modules) and linked worktrees (.git/worktrees),
// and looks only at what changed while the command ran: a file's change
// time (ctime), which the kernel sets on every write, rename, link and
// chmod, and which a process without CAP_SYS_TIME cannot set back. For
// what changed:
//
//   - a configuration file (config, config.worktree) keeps only settings
//     known not to run a program or read other files (core.filemode,
//     remote.NAME.url, branch.NAME.merge, user.name …; see allowedKey);
//     every other key (core.fsmonitor, core.hooksPath, core.pager,
//     core.sshCommand, diff.external, filter.*, alias.*, include.path,
//     includeIf.*, credential.*, gpg.*, url.*, protocol.*.allow, …) is
//     removed with git's own writer, after the file is copied aside;
//   - a hook (any file of hooks/, or of a core.hooksPath directory inside
//     the workspace, whose name does not end in .sample) is renamed
//     aside, as is a hooks directory replaced by a link;
//   - a commondir, a .git file or a .git link that points outside the
//     workspace is renamed aside; one that points inside has its target
//     checked in turn.
//
// "Aside" is the same name with ".runbox-quarantined-TIME" appended, in
// the same directory: git never reads it, the user can look at it and
// take it back. Each finding is reported (the caller makes it a
// violation of the command and a warning in its result).
//
// # Limits
//
// Only the workspace is walked, not the other writable roots (TMPDIR,
// caches), where the user's git does not usually run; the walk stops
// after Options.MaxDirs directories and says so. What a running command
// plants lives until the next check made while it runs (as root, the
// workspace repository's hooks and config are also read-only during the
// command; see confine): the user's git run in that moment can meet it,
// once for each file, since planting one again stops the command.
// Attributes (.gitattributes, info/attributes) are left alone: they only
// select filter and diff drivers that a configuration must define, and
// configurations the command wrote lose those definitions.
package gitguard
