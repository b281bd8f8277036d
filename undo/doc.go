// Package undo answers two questions about a workspace directory that
// agents run commands in: "what did that command change?" and "put it
// back". runbox starts every command and knows its workspace, so it
// brackets each one with [Journal.Begin] and [Command.End], reports the
// [Record] End returns, and offers [Journal.Undo] when a command (a
// wrong sed -i, a generator overwriting files, git checkout .) broke
// something.
//
// # Checkpoints and steps
//
// A [Journal] is a sequence of checkpoints of one workspace. A
// checkpoint walks the tree and compares it with the previous one; what
// differs becomes a step, numbered from 1 and never renumbered. Begin
// and End each take a checkpoint, so the steps made while a command was
// open are its changes, and the step a Begin records holds whatever
// changed since the last checkpoint: the user's own edits between
// commands, a step made outside any command. A step names every command
// open while it was made; when two commands overlap, each one's record
// names the other in [Record].Concurrent, because their changes cannot be
// told apart.
//
// A command is open on disk from Begin to End, with the pid of the
// process that began it. If that process exits without calling End, the
// next checkpoint (in any process) still names the command in its step,
// so its changes can be undone, and then forgets it.
//
// # What a checkpoint looks at
//
// The walk reads every directory and lstats every entry relative to its
// parent's descriptor (openat, fstatat), never following a symbolic
// link; a link is recorded as a link with its target. It does not enter
// a directory on another filesystem than the root's (a mount point is
// recorded, its contents are not). An entry has changed when its type,
// mode, size, modification time, change time or inode changed. Only then
// is a regular file read again: its SHA-256 decides whether its content
// changed. A file rewritten with the same bytes is therefore "touched",
// not modified: it is not listed in a record, though undo restores its
// time. Metadata can fail to move when a file is written twice within
// one timestamp tick, so a file that changed just before a checkpoint is
// hashed again at the next one whatever its metadata says.
//
// [DefaultExcludes] lists what is never walked nor recorded: dependency
// trees and caches that commands rebuild (node_modules, .venv,
// __pycache__, ...) and git's object database. [Options].Exclude adds to
// the list, and every record repeats it in [Record].Excluded so a reader
// knows what was not watched. A journal directory inside its own
// workspace is left out too. Undo leaves excluded paths alone, except
// that a directory it must remove goes with everything in it.
//
// # The store
//
// When a command overwrites a file in place, its earlier content must
// already be somewhere. So the store mirrors the workspace: every file's
// current content is kept as an object named by its SHA-256 (identical
// files, hard links included, share one), and the first checkpoint of a
// journal makes that mirror. A step keeps the objects of the states it
// replaced. Objects are copied with FICLONE first, so on btrfs, xfs and
// other filesystems with reflinks the mirror costs no space until a file
// changes; elsewhere they are plain copies. Object names are computed
// from the copied bytes, never taken from the workspace.
//
// The store is bounded by [Options].MaxBytes (1 GiB by default). After a
// checkpoint, the oldest steps are dropped until it fits, and the record
// counts them in [Record].Dropped; an undo to a dropped step fails with
// [ErrUnknownStep]. The mirror comes first: when it alone would exceed
// the bound, new content is not kept. A file larger than
// [Options].MaxFileBytes (256 MiB by default) is tracked by its metadata
// only, as is a file this user cannot read. A record lists such files in
// [Record].NotKept; an undo that would need their earlier content
// refuses with a [*NotKeptError], though it can still remove a file the
// command created or undo a chmod.
//
// # Undo
//
// [Journal.Undo] first takes a checkpoint, so that edits made since the
// last one are seen. Then it reverts every command step from
// [UndoOptions].To on (by default the last command's steps), giving each
// path they changed its state from before the earliest of them: content,
// mode, link target, type, modification time, absence. Steps made
// outside any command are left alone, and so are the paths they changed,
// with one exception: when such a step changed a path a reverted step
// changed too (the same path, something inside a directory the reverted
// step replaced or removed, or a directory around it that the outside
// step replaced or removed), reverting would silently throw the user's
// edit away. Undo then refuses with a [*ConflictError] naming the paths
// and steps, unless [UndoOptions].Force asks to revert those steps too.
// Every refusal ([ErrConflict], [ErrNotKept], [ErrNothing],
// [ErrUnknownStep]) happens before the workspace is touched. Reverted
// steps leave the journal; [Undone] lists them and their commands, so a
// caller can say "this also undid X".
//
// Undo never writes outside the root. Every name it creates, removes or
// changes goes through an [os.Root] opened on the workspace, so a link a
// command left behind cannot lead it elsewhere, and a link or file
// standing where a directory must be is removed, not followed. It
// removes what must not exist (deepest first, never crossing into
// another filesystem), makes directories (shallowest first), writes each
// file to a temporary name beside it and renames it into place, makes
// links and fifos the same way, then sets modes and finally times.
// Restored files are new inodes: hard links among them come back as
// separate files. Set-user-ID and set-group-ID bits are never restored:
// undo would otherwise hand back privileges a command's content may not
// deserve. Owners are not restored (undo runs as the user), nor the times
// of symbolic links. Sockets and devices cannot be made and are listed
// in [Undone].Skipped. If a write fails midway, what was written stays,
// the reverted steps stay in the journal, and the next checkpoint
// records the partial restore as a step made outside any command.
//
// # Processes and locking
//
// A journal lives in a private directory of runbox's state (see [Open]);
// a long-running runbox serve and a one-shot runbox undo may use it at
// the same time. Every operation takes an exclusive flock on it, reloads
// what another process changed (a generation number says whether it
// has to), acts, saves, and unlocks. The state is saved by overwriting
// the spare state file (the state before the current one) and
// exchanging it with the current one (renameat2 RENAME_EXCHANGE): the
// current file is whole at every moment, and no file is renamed over
// another, which ext4 pays for with a flush (about 200 µs a save against
// 20). Without the exchange the state goes through a temporary file
// renamed into place. Steps, objects and indexes are always written to a
// temporary file and renamed.
// Within a process a Journal is safe for concurrent use. Nothing in this
// package starts a goroutine.
//
// The package needs a Unix system; reflinks and fifo restoration are
// Linux only.
package undo
