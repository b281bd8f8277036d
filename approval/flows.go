package approval

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file holds what the shape of a line shows beyond its programs: a
// file read in a line that also sends or writes something (how a key
// leaves the machine: cat KEY | curl -d @-, nc host < KEY, curl -d
// "$(cat KEY)"), the commands a data store is fed on its input (echo
// FLUSHALL | redis-cli), and loops that start processes without end.

// Facts of this file.
const (
	factLeak        = "@leak"         // args: "send" and the program, or "write" and the file written; the file read
	factStoreHidden = "@store-hidden" // args: the store's client, where its statements come from
	factSpawnLoop   = "@spawn-loop"   // args: the loop ("while", "until", "for")
)

// fileReaders print (or encode, or archive) the files they are given.
var fileReaders = setOf(`cat tac head tail nl base64 base32 basenc xxd od hexdump strings gzip bzip2 xz zstd lz4
	zcat openssl gpg gpg2 tar bsdtar gtar zip 7z 7za uuencode grep sed awk gawk cut sort uniq jq dd`)

// senders send what they are given to another machine or out of the
// session (the clipboard); with fetchers they are a leak's "send" sinks.
var senders = setOf(`ssh scp sftp rsync rclone ftp lftp sendmail mail mailx mutt aws gsutil s3cmd azcopy
	xclip xsel pbcopy wl-copy`)

// flowKinds tells readers from sinks in one lookup per command: a check
// pays for leaks on every line, most of which do neither.
var flowKinds = func() map[string]flowKind {
	m := make(map[string]flowKind)
	for n := range fileReaders {
		m[n] = flowRead
	}
	for _, set := range []map[string]bool{senders, fetchers} {
		for n := range set {
			m[n] = flowSend
		}
	}
	m[factWrite] = flowWrite
	return m
}()

// flowKind is what a command does in a leak: reads files, sends, writes.
type flowKind uint8

const (
	flowNone flowKind = iota
	flowRead
	flowSend
	flowWrite
)

// storeClients are the clients that run the commands they read on their
// input, by the language they read: "kv" one command a line, "js" a
// script, "sftp" transfer commands (put sends a local file away).
var storeClients = map[string]string{
	"redis-cli": "kv", "valkey-cli": "kv", "keydb-cli": "kv",
	"mongo": "js", "mongosh": "js",
	"sftp": "sftp",
}

// maxLeakPairs bounds the "@leak" facts of one line: each read is paired
// with each sink, and a line with more pairs than this is judged on the
// first ones (a long line of reads and sends is rare, and its first
// pairs are where a key would be).
const maxLeakPairs = 64

// leaks records, for a line that sends something over the network or
// writes a file, each file a program printed or fed to a command's
// input, paired with each sink. Which files are credentials, and which
// sinks are harmless (/dev/null), is the rules' to say: the facts carry
// the paths as written.
func (a *analyzer) leaks() {
	// Most lines have few of either: the buffers keep them off the heap.
	var readBuf [8]string
	var sinkBuf [4][2]string
	reads, sinks := readBuf[:0], sinkBuf[:0]
	for _, c := range a.cmds {
		switch flowKinds[c.name] {
		case flowWrite:
			if len(c.args) == 2 {
				sinks = append(sinks, [2]string{"write", c.args[1]})
			}
		case flowSend:
			sinks = append(sinks, [2]string{"send", c.name})
		case flowRead:
			for _, x := range c.args {
				if !strings.HasPrefix(x, "-") {
					reads = append(reads, x)
				}
			}
		}
	}
	if len(sinks) == 0 {
		return
	}
	reads = append(reads, a.readsIn...)
	n := 0
	for _, s := range sinks {
		for _, r := range reads {
			if n++; n > maxLeakPairs {
				return
			}
			a.fact(factLeak, nil, s[0], s[1], r)
		}
	}
}

// storeInput judges text a data store reads on its input as the commands
// it holds: a key-value client's lines each as that client given the line
// as arguments, a JavaScript shell's as its --eval.
func (a *analyzer) storeInput(name, text string, via []string) {
	switch storeClients[name] {
	case "kv":
		for l := range strings.Lines(text) {
			if f := strings.Fields(l); len(f) > 0 {
				a.add(command{name: name, args: f, via: via})
			}
		}
	case "js":
		a.add(command{name: name, args: []string{"--eval", text}, via: via})
	case "sftp":
		for l := range strings.Lines(text) {
			if f := strings.Fields(l); len(f) > 1 && (f[0] == "put" || f[0] == "mput" || f[0] == "reput") {
				a.readsIn = append(a.readsIn, f[1])
			}
		}
	}
}

// endlessLoop records a loop whose condition never ends it (while true,
// while :, until false, for ((;;))) and whose body starts a process in
// the background that it does not wait for: each turn adds a process
// until the machine runs out. cond nil is a condition that always holds.
func (a *analyzer) endlessLoop(until bool, cond, body []*syntax.Stmt, via []string) {
	if cond != nil && !alwaysHolds(cond, until) {
		return
	}
	spawns, waits := false, false
	for _, st := range body {
		syntax.Walk(st, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.FuncDecl:
				return false
			case *syntax.WhileClause:
				// An endless loop inside is judged on its own: each
				// statement is walked by its nearest endless loop only.
				return !alwaysHolds(n.Cond, n.Until)
			case *syntax.ForClause:
				if c, ok := n.Loop.(*syntax.CStyleLoop); ok && c.Cond == nil {
					return false
				}
			case *syntax.Stmt:
				if n.Background || n.Coprocess {
					spawns = true
				}
			case *syntax.CallExpr:
				if len(n.Args) > 0 && wordArg(n.Args[0]).text == "wait" {
					waits = true
				}
			}
			return true
		})
	}
	if !spawns || waits {
		return
	}
	kind := "for"
	switch {
	case until:
		kind = "until"
	case cond != nil:
		kind = "while"
	}
	a.fact(factSpawnLoop, via, kind)
}

// alwaysHolds reports whether a loop condition is the constant that keeps
// it going: true or : for while, false for until.
func alwaysHolds(cond []*syntax.Stmt, until bool) bool {
	if len(cond) != 1 || cond[0].Negated {
		return false
	}
	ce, ok := cond[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) != 1 {
		return false
	}
	switch wordArg(ce.Args[0]).text {
	case "true", ":", "/bin/true", "/usr/bin/true":
		return !until
	case "false", "/bin/false", "/usr/bin/false":
		return until
	}
	return false
}
