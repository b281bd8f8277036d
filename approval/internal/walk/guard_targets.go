package walk

import (
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
	"mvdan.cc/sh/v3/syntax"
)

// guardTarget records a change to the path w names when it is, holds or
// may be a protected path.
func (a *Analyzer) guardTarget(in *stmtInfo, c *rules.Command, how string, w shell.Arg, r reach) {
	if a.guard == nil {
		return
	}
	if class := a.protects(a.pathValues(w.Word, w.Text), r); class != "" {
		in.cmds = append(in.cmds, rules.Command{Name: rules.FactProtected, Args: []string{class, how, w.Text}, Via: c.Via, Source: c.Source})
	}
}

// guardInto records a write of a file or tree named like src into the
// directory dir names (cp src dir/, mv src dir/), as dir/base(src).
func (a *Analyzer) guardInto(in *stmtInfo, c *rules.Command, dir, src shell.Arg, r reach) {
	if a.guard == nil {
		return
	}
	base := path.Base(strings.TrimRight(src.Text, "/"))
	var vals []pathValue
	for _, v := range a.pathValues(dir.Word, dir.Text) {
		if base == "." || base == "/" || strings.ContainsAny(base, "$`") {
			vals = append(vals, v) // the contents of src, or an unknown name
			r = reachMaybe
			continue
		}
		vals = append(vals, v.join(base))
	}
	if class := a.protects(vals, r); class != "" {
		in.cmds = append(in.cmds, rules.Command{Name: rules.FactProtected, Args: []string{class, c.Name, dir.Text}, Via: c.Via, Source: c.Source})
	}
}

// guardCommand records what a resolved command changes among the
// protected paths: its target operands, by the rules of each program.
// rest are its arguments.
func (a *Analyzer) guardCommand(in *stmtInfo, c *rules.Command, rest []shell.Arg) {
	if a.guard == nil {
		return
	}
	each := func(how string, args []shell.Arg, r reach) {
		for _, w := range args {
			a.guardTarget(in, c, how, w, r)
		}
	}
	switch c.Name {
	case "rm", "srm":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{})
		if shell.HasOpt(opts, "-r", "-R", "--recursive") {
			each(c.Name, r, reachDestroy)
		} else {
			each(c.Name, r, reachWrite)
		}
	case "unlink", "rmdir", "touch", "mkdir", "mkfifo", "shred", "wipe", "truncate", "dos2unix", "unix2dos", "sponge":
		_, r := shell.SplitOpts(rest, operandSpecs[c.Name])
		each(c.Name, r, reachWrite)
	case "patch":
		opts, r := shell.SplitOpts(rest, operandSpecs[c.Name])
		if len(r) > 0 {
			each(c.Name, r[:1], reachWrite)
		}
		if v, ok := optTarget(rest, opts, "-o", "--output"); ok && v.Text != "-" {
			each(c.Name, []shell.Arg{v}, reachWrite)
		}
	case "chmod", "chown", "chgrp", "chattr", "setfacl", "chcon", "restorecon":
		a.guardPerms(in, c, rest)
	case "tee":
		_, r := shell.SplitOpts(rest, shell.OptSpec{})
		each("tee", r, reachWrite)
	case "cp", "mv", "install", "ln", "rsync", "scp", "ditto":
		a.guardCopy(in, c, rest)
	case "sed", "gsed":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "efl", Long: []string{"--expression", "--file", "--line-length"}})
		if shell.HasOpt(opts, "-i") || hasOptPrefix(opts, "--in-place") {
			if !shell.HasOpt(opts, "-e", "-f", "--expression", "--file") && len(r) > 0 {
				r = r[1:]
			}
			each("sed-i", r, reachWrite)
		}
	case "dd":
		for _, w := range rest {
			if strings.HasPrefix(w.Text, "of=") {
				a.guardTarget(in, c, "dd", subArg(w, "of="), reachWrite)
			}
		}
	case "curl", "wget", "sort":
		opts, _ := shell.SplitOpts(rest, shell.OptSpec{Short: "oOdHXuAeEbcFmrTwYyzKPDktS", Long: []string{"--output", "--output-document",
			"--data", "--header", "--request", "--user", "--user-agent", "--referer", "--cookie", "--form", "--url"}})
		flags := []string{"-o", "--output"}
		if c.Name == "wget" {
			flags = []string{"-O", "--output-document"}
		}
		if t, ok := optTarget(rest, opts, flags...); ok && t.Text != "-" {
			a.guardTarget(in, c, c.Name, t, reachWrite)
		}
	case "find":
		a.guardFind(in, c, rest)
	case "tar", "bsdtar", "gtar":
		a.guardTar(in, c, rest)
	case "unzip":
		if d, ok := optArg(rest, "-d"); ok {
			a.guardTarget(in, c, "unzip", d, reachMaybe)
		}
	case "7z", "7za", "7zr", "7zz":
		// 7z x ARCHIVE -oDIR extracts a tree into DIR.
		for _, w := range rest {
			if strings.HasPrefix(w.Text, "-o") && len(w.Text) > 2 {
				a.guardTarget(in, c, c.Name, subArg(w, "-o"), reachMaybe)
			}
		}
	case "yq":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{})
		if shell.HasOpt(opts, "-i", "--inplace") {
			each("yq-i", r, reachWrite)
		}
	case "awk", "gawk":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "fvi", Long: []string{"--file", "--assign", "--include"}})
		if slices.Contains(opts, "inplace") {
			if !shell.HasOpt(opts, "-f", "--file") && len(r) > 0 {
				r = r[1:]
			}
			each("awk-inplace", r, reachWrite)
		}
	case "gzip", "bzip2", "xz", "lzma", "zstd", "compress", "gunzip", "bunzip2", "unxz", "unzstd", "lzip", "lz4":
		opts, r := shell.SplitOpts(rest, shell.OptSpec{Short: "S", Long: []string{"--suffix"}})
		if !shell.HasOpt(opts, "-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test") {
			each(c.Name, r, reachWrite)
		}
	case "vi", "vim", "nvim", "view", "nano", "emacs", "micro", "pico", "ed", "ex", "joe", "mcedit", "kak", "hx", "code":
		for _, w := range rest {
			if !strings.HasPrefix(w.Text, "-") && !strings.HasPrefix(w.Text, "+") {
				a.guardTarget(in, c, c.Name, w, reachWrite)
			}
		}
	case "docker":
		// docker cp CONTAINER:PATH HOSTPATH writes on the host.
		if len(c.Args) >= 3 && c.Args[0] == "cp" && !strings.Contains(c.Args[len(c.Args)-1], ":") {
			a.guardTarget(in, c, "docker-cp", shell.Arg{Text: c.Args[len(c.Args)-1]}, reachMaybe)
		}
	}
}

// optArg finds the value of the first of names among raw arguments: the
// argument after "-t" or "--target-directory", or the rest of
// "--target-directory=DIR" and "-tDIR", keeping its word so variables
// in it resolve.
func optArg(rest []shell.Arg, names ...string) (shell.Arg, bool) {
	for i, w := range rest {
		if w.Text == "--" {
			break
		}
		for _, n := range names {
			switch {
			case w.Text == n && i+1 < len(rest):
				return rest[i+1], true
			case strings.HasPrefix(n, "--") && strings.HasPrefix(w.Text, n+"="):
				return subArg(w, n+"="), true
			case !strings.HasPrefix(n, "--") && len(w.Text) > len(n) && strings.HasPrefix(w.Text, n):
				return subArg(w, n), true
			}
		}
	}
	return shell.Arg{}, false
}

// optTarget returns the value of the first of names that opts (expanded
// by splitOpts) holds, as the raw argument when it can be found there (so
// its variables resolve) and as text otherwise (-xvt DIR).
func optTarget(rest []shell.Arg, opts []string, names ...string) (shell.Arg, bool) {
	t, ok := shell.OptValue(opts, names...)
	if !ok {
		return shell.Arg{}, false
	}
	if w, ok := optArg(rest, names...); ok && w.Text == t {
		return w, true
	}
	return shell.Arg{Text: t}, true
}

// operandSpecs lists the options that take a value of programs whose
// operands are all files they change.
var operandSpecs = map[string]shell.OptSpec{
	"touch":    {Short: "drt", Long: []string{"--date", "--reference"}},
	"mkdir":    {Short: "mZ", Long: []string{"--mode", "--context"}},
	"mkfifo":   {Short: "mZ", Long: []string{"--mode", "--context"}},
	"shred":    {Short: "ns", Long: []string{"--iterations", "--size", "--random-source"}},
	"truncate": {Short: "sr", Long: []string{"--size", "--reference"}},
	"patch":    {Short: "piordDBFzVYg", Long: []string{"--strip", "--input", "--output", "--reject-file", "--directory", "--ifdef", "--prefix", "--fuzz", "--suffix"}},
}

// subArg is the part of w after prefix ("of=" of dd's "of=PATH"), with
// the word trimmed the same way when its first part is plain text, so
// variables in the rest still resolve.
func subArg(w shell.Arg, prefix string) shell.Arg {
	out := shell.Arg{Text: strings.TrimPrefix(w.Text, prefix)}
	if w.Word == nil || len(w.Word.Parts) == 0 {
		return out
	}
	if lit, ok := w.Word.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, prefix) {
		parts := slices.Clone(w.Word.Parts)
		parts[0] = &syntax.Lit{ValuePos: lit.ValuePos, ValueEnd: lit.ValueEnd, Value: lit.Value[len(prefix):]}
		if parts[0].(*syntax.Lit).Value == "" {
			parts = parts[1:]
		}
		out.Word = &syntax.Word{Parts: parts}
	}
	return out
}

// modeArg matches a chmod mode operand: octal or symbolic.
var modeArg = lazyRegexp(`^([0-7]{1,4}|[ugoa]*([-+=]([rwxXst]*|[ugo]))+(,[ugoa]*([-+=]([rwxXst]*|[ugo]))+)*)$`)

// guardPerms: chmod MODE FILE…, chown OWNER FILE…, chgrp GROUP FILE…,
// chattr +i FILE…, setfacl -m ACL FILE…, chcon CONTEXT FILE…; recursion
// reaches everything under a directory.
func (a *Analyzer) guardPerms(in *stmtInfo, c *rules.Command, rest []shell.Arg) {
	spec := shell.OptSpec{Long: []string{"--reference"}}
	switch c.Name {
	case "setfacl":
		spec = shell.OptSpec{Short: "mxMX", Long: []string{"--modify", "--remove", "--set", "--modify-file", "--remove-file", "--set-file"}}
	case "chcon":
		spec = shell.OptSpec{Short: "urtl", Long: []string{"--user", "--role", "--type", "--range", "--reference"}}
	case "chattr":
		spec = shell.OptSpec{Short: "vp"}
	case "restorecon":
		spec = shell.OptSpec{Short: "ef"}
	}
	opts, r := shell.SplitOpts(rest, spec)
	reference := shell.HasOpt(opts, "--reference") || hasOptPrefix(opts, "--reference=")
	switch c.Name {
	case "chmod":
		if !reference && len(r) > 0 && modeArg().MatchString(r[0].Text) {
			r = r[1:]
		}
	case "chown", "chgrp":
		if !reference && len(r) > 0 {
			r = r[1:]
		}
	case "chcon":
		if !reference && !shell.HasOpt(opts, "-u", "-r", "-t", "-l", "--user", "--role", "--type", "--range") && len(r) > 0 {
			r = r[1:]
		}
	case "chattr":
		r = slices.DeleteFunc(slices.Clone(r), func(w shell.Arg) bool { return strings.HasPrefix(w.Text, "+") || strings.HasPrefix(w.Text, "=") })
	}
	reach := reachWrite
	if shell.HasOpt(opts, "-R", "--recursive") || c.Name == "restorecon" && shell.HasOpt(opts, "-r") {
		reach = reachMaybe // a directory above a protected path changes it too
	}
	for _, w := range r {
		a.guardTarget(in, c, c.Name, w, reach)
	}
}

// guardCopy: the destination of cp, mv, install, ln, rsync, scp and
// ditto, the sources mv moves away, and links to protected paths.
func (a *Analyzer) guardCopy(in *stmtInfo, c *rules.Command, rest []shell.Arg) {
	spec := wrapperSpecs["cp"]
	if c.Name == "install" {
		spec = shell.OptSpec{Short: "tSmogC", Long: []string{"--target-directory", "--suffix", "--mode", "--owner", "--group"}}
	}
	if c.Name == "rsync" {
		spec = shell.OptSpec{Short: "eTB", Long: []string{"--rsh", "--temp-dir", "--exclude", "--include", "--filter", "--files-from",
			"--exclude-from", "--include-from", "--backup-dir", "--suffix", "--compare-dest", "--copy-dest", "--link-dest", "--rsync-path", "--chmod", "--chown"}}
	}
	opts, r := shell.SplitOpts(rest, spec)
	if c.Name == "install" && shell.HasOpt(opts, "-d", "--directory") {
		for _, w := range r {
			a.guardTarget(in, c, c.Name, w, reachWrite)
		}
		return
	}
	var dest shell.Arg
	var srcs []shell.Arg
	if t, ok := optTarget(rest, opts, "-t", "--target-directory"); ok {
		dest, srcs = t, r
	} else if len(r) >= 2 {
		dest, srcs = r[len(r)-1], r[:len(r)-1]
	} else {
		return
	}
	if (c.Name == "rsync" || c.Name == "scp") && isRemote(dest.Text) {
		return
	}
	recursive := c.Name == "mv" || c.Name == "rsync" || c.Name == "ditto" ||
		shell.HasOpt(opts, "-r", "-R", "-a", "--recursive", "--archive")
	destReach := reachWrite
	if c.Name == "rsync" && hasOptPrefix(opts, "--del") {
		destReach = reachDestroy // deletes what the source lacks
	}
	a.guardTarget(in, c, c.Name, dest, destReach)
	into := reachWrite
	if recursive {
		into = reachMaybe
	}
	for _, s := range srcs {
		if c.Name == "rsync" && strings.HasSuffix(s.Text, "/") {
			a.guardTarget(in, c, c.Name, dest, reachMaybe) // the contents of s
		} else {
			a.guardInto(in, c, dest, s, into)
		}
		if c.Name == "mv" || c.Name == "rsync" && shell.HasOpt(opts, "--remove-source-files") {
			a.guardTarget(in, c, c.Name, s, reachDestroy)
		}
	}
	if c.Name == "ln" || c.Name == "cp" && shell.HasOpt(opts, "-s", "-l", "--symbolic-link", "--link") {
		var links []pathValue
		for _, s := range srcs {
			for _, d := range a.linkValues(dest.Word, dest.Text) {
				links = append(links, d, d.join(path.Base(s.Text)))
			}
		}
		for _, s := range srcs {
			a.link(a.pathValues(s.Word, s.Text), links)
		}
	}
}

func isRemote(s string) bool {
	i := strings.IndexByte(s, ':')
	return i > 0 && !strings.Contains(s[:i], "/")
}

// guardFind: find START… -delete (or -exec of a program that changes
// files) reaches everything under each start point.
func (a *Analyzer) guardFind(in *stmtInfo, c *rules.Command, rest []shell.Arg) {
	var starts []shell.Arg
	i := 0
	for i < len(rest) && strings.HasPrefix(rest[i].Text, "-") && len(rest[i].Text) == 2 && strings.ContainsAny(rest[i].Text[1:], "HLP") {
		i++
	}
	for ; i < len(rest); i++ {
		t := rest[i].Text
		if strings.HasPrefix(t, "-") || t == "(" || t == "!" {
			break
		}
		starts = append(starts, rest[i])
	}
	changes := false
	for j := i; j < len(rest); j++ {
		switch rest[j].Text {
		case "-delete":
			changes = true
		case "-exec", "-execdir", "-ok", "-okdir":
			if j+1 < len(rest) && fileChangers[shell.CanonicalName(rest[j+1].Text)] {
				changes = true
			}
		}
	}
	if changes {
		for _, s := range starts {
			a.guardTarget(in, c, "find", s, reachDestroy)
		}
	}
}

// guardFindXargs: find START… | xargs PROG, where PROG changes the files
// it is given, reaches everything under each start point, as -exec does.
func (a *Analyzer) guardFindXargs(findArgs []string, prog string, via []string) {
	if a.guard == nil {
		return
	}
	i := 0
	for i < len(findArgs) && (findArgs[i] == "-H" || findArgs[i] == "-L" || findArgs[i] == "-P") {
		i++
	}
	for ; i < len(findArgs); i++ {
		s := findArgs[i]
		if strings.HasPrefix(s, "-") || s == "(" || s == "!" {
			break
		}
		if class := a.protects(a.pathValues(nil, s), reachDestroy); class != "" {
			a.fact(rules.FactProtected, via, class, "find|xargs "+prog, s)
		}
	}
}

// listFeeds guards the paths a list of names feeds to a program that
// changes files through xargs: echo PATH… | xargs sed -i, ls DIR/* |
// xargs rm, printf '%s\n' PATH… | xargs cp evil.
func (a *Analyzer) listFeeds(from, to *stmtInfo, via []string) {
	if a.guard == nil || from.final == nil {
		return
	}
	var paths []string
	switch {
	case from.printsOK:
		paths = strings.Fields(from.prints)
	case from.final.Name == "ls":
		for _, s := range from.final.Args {
			if !strings.HasPrefix(s, "-") {
				paths = append(paths, s)
			}
		}
	default:
		return
	}
	for _, c := range to.cmds {
		if !slices.Contains(c.Via, "xargs") || !fileChangers[c.Name] {
			continue
		}
		for _, p := range paths {
			if class := a.protects(a.pathValues(nil, p), reachWrite); class != "" {
				a.fact(rules.FactProtected, via, class, "xargs "+c.Name, p)
			}
		}
	}
}

// fileChangers are programs that change the files they are given, for
// find -exec.
var fileChangers = setOf(`rm srm unlink shred wipe truncate chmod chown chgrp chattr setfacl chcon mv cp tee sed gsed
	perl dd touch install ln rsync`)

// guardTar: tar -x -C DIR writes a tree into DIR; --remove-files deletes
// what it archives; -c/-r/-u -f FILE writes FILE.
func (a *Analyzer) guardTar(in *stmtInfo, c *rules.Command, rest []shell.Arg) {
	extract, create := false, false
	var dir, archive *shell.Arg
	values := make(map[int]bool) // indexes of option values
	for i := 0; i < len(rest); i++ {
		t := rest[i].Text
		next := func() *shell.Arg {
			if i+1 < len(rest) {
				i++
				values[i] = true
				return &rest[i]
			}
			return nil
		}
		switch {
		case t == "--extract" || t == "--get":
			extract = true
		case t == "--create" || t == "--append" || t == "--update" || t == "--concatenate":
			create = true
		case t == "-C" || t == "--directory":
			dir = next()
		case t == "-f" || t == "--file":
			archive = next()
		case strings.HasPrefix(t, "--directory="):
			v := subArg(rest[i], "--directory=")
			dir = &v
		case strings.HasPrefix(t, "--file="):
			v := subArg(rest[i], "--file=")
			archive = &v
		case strings.HasPrefix(t, "--"):
		case strings.HasPrefix(t, "-") || i == 0 && !strings.ContainsAny(t, "/."):
			cluster := strings.TrimPrefix(t, "-")
			extract = extract || strings.ContainsRune(cluster, 'x')
			create = create || strings.ContainsAny(cluster, "cruA")
			if strings.HasSuffix(cluster, "f") {
				archive = next()
			} else if strings.HasSuffix(cluster, "C") {
				dir = next()
			}
			values[i] = true
		}
	}
	if extract && dir != nil {
		a.guardTarget(in, c, "tar-x", *dir, reachMaybe)
	}
	if create && archive != nil && archive.Text != "-" {
		a.guardTarget(in, c, "tar-c", *archive, reachWrite)
	}
	if slices.ContainsFunc(rest, func(w shell.Arg) bool { return w.Text == "--remove-files" }) {
		for i, w := range rest {
			if !values[i] && !strings.HasPrefix(w.Text, "-") {
				a.guardTarget(in, c, "tar-remove", w, reachDestroy)
			}
		}
	}
}
