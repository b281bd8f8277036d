package walk

import (
	"path"
	"slices"
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
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
	zcat openssl gpg gpg2 tar bsdtar gtar zip 7z 7za uuencode grep sed awk gawk cut sort uniq jq dd sqlite3 duckdb`)

// senders send what they are given to another machine or out of the
// session (the clipboard, a DNS query's name); with fetchers they are a
// leak's "send" sinks.
var senders = setOf(`ssh scp sftp rsync rclone ftp lftp sendmail mail mailx mutt aws gsutil s3cmd azcopy
	xclip xsel pbcopy wl-copy dig nslookup drill host telnet ping ping6 traceroute tracepath`)

// flowKinds tells readers, sinks and sources of secrets apart in one
// lookup per command: a check pays for leaks on every line, most of
// which do none of these.
var flowKinds = func() map[string]flowKind {
	m := make(map[string]flowKind)
	for n := range fileReaders {
		m[n] |= flowRead
	}
	for _, set := range []map[string]bool{senders, fetchers} {
		for n := range set {
			m[n] |= flowSend
		}
	}
	for n := range envDumps {
		m[n] |= flowSecret
	}
	for n := range secretHelpers {
		m[n] |= flowSecret
	}
	m["echo"] |= flowSecret
	m["printf"] |= flowSecret
	m["jq"] |= flowSecret    // jq -n env
	m["openssl"] |= flowSend // openssl s_client: see sends
	m[rules.FactWrite] = flowWrite
	return m
}()

// flowKind is what a command does in a leak, as a set: reads files,
// sends, writes, prints secrets.
type flowKind uint8

const (
	flowRead flowKind = 1 << iota
	flowSend
	flowWrite
	flowSecret
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
func (a *Analyzer) leaks() {
	// Most lines have few of either: the buffers keep them off the heap.
	var readBuf [8]string
	var sinkBuf [4]leakSink
	var secretBuf [2]leakSink
	reads, sinks, secrets := readBuf[:0], sinkBuf[:0], secretBuf[:0]
	for i := range a.cmds {
		c := &a.cmds[i]
		kind := flowKinds[c.Name]
		if kind == 0 && (strings.HasPrefix(c.Name, "docker-credential-") || strings.HasPrefix(c.Name, "git-credential-")) {
			kind = flowSecret
		}
		if kind == 0 {
			continue
		}
		if kind&flowSend != 0 && !sends(c) {
			kind &^= flowSend
		}
		if kind&flowWrite != 0 && len(c.Args) == 2 {
			// A write to /dev/tcp or /dev/udp is bash's own socket.
			if t := c.Args[1]; strings.HasPrefix(t, "/dev/tcp/") || strings.HasPrefix(t, "/dev/udp/") {
				sinks = append(sinks, leakSink{"send", t[:len("/dev/tcp")], i})
			} else {
				sinks = append(sinks, leakSink{"write", t, i})
			}
		}
		if kind&flowSend != 0 {
			sinks = append(sinks, leakSink{"send", c.Name, i})
			if fetchers[c.Name] && sendsSecretVariable(c.Args) {
				// The client itself carries the secret (in its URL, a
				// header, its body): paired with every sink, its own too.
				secrets = append(secrets, leakSink{"", secretVariable, -1})
			}
		}
		if kind&flowRead != 0 {
			for _, x := range c.Args {
				if !strings.HasPrefix(x, "-") {
					reads = append(reads, x)
				}
			}
		}
		if kind&flowSecret != 0 {
			if s := secretSource(c); s != "" {
				secrets = append(secrets, leakSink{"", s, i})
			}
		}
	}
	if len(sinks) == 0 {
		return
	}
	reads = append(reads, a.readsIn...)
	if slices.ContainsFunc(sinks, func(s leakSink) bool { return s.how == "send" && s.cmd >= 0 && uploadsNamed(&a.cmds[s.cmd]) }) {
		// The sender uploads a file named by a variable, a loop's or a
		// function's argument or xargs' {}: which file is known only at
		// run time, so every path the line names may be it
		// (F=~/.netrc; curl -T "$F" …, for f in ~/.ssh/id_*; do curl -d
		// @"$f" …).
		reads = append(reads, lineWords(a.line)...)
	}
	n := 0
	for _, s := range sinks {
		for _, r := range reads {
			if n++; n > maxLeakPairs {
				return
			}
			a.fact(factLeak, nil, s.how, s.to, r)
		}
		// A secret a program prints goes wherever the line sends data,
		// but not to the program itself (aws configure
		// export-credentials is not aws sending them).
		for _, r := range secrets {
			if r.cmd == s.cmd {
				continue
			}
			if n++; n > maxLeakPairs {
				return
			}
			a.fact(factLeak, nil, s.how, s.to, r.to)
		}
	}
}

// uploadsNamed reports whether a network client c uploads a file whose
// name is not in its own arguments: @$f, f=@$1, -T "$F", @{} (xargs).
func uploadsNamed(c *rules.Command) bool {
	indirect := func(x string) bool { return strings.Contains(x, "$") || strings.Contains(x, "{}") }
	for i, x := range c.Args {
		if at := strings.Index(x, "@"); at >= 0 && indirect(x[at:]) {
			return true
		}
		switch {
		case x == "-T" || x == "--upload-file" || x == "--post-file" || x == "--body-file":
			if i+1 < len(c.Args) && indirect(c.Args[i+1]) {
				return true
			}
		case strings.HasPrefix(x, "--upload-file=") || strings.HasPrefix(x, "--post-file=") || strings.HasPrefix(x, "--body-file="):
			if indirect(x) {
				return true
			}
		}
	}
	return false
}

// maxLineWords bounds the words lineWords takes from a line.
const maxLineWords = 64

// lineWords returns the words of src that may name a file: split at
// blanks, quotes and the shell's operators, up to maxLineWords of them,
// a glob also with each star standing for a letter.
func lineWords(src string) []string {
	var out []string
	for w := range strings.FieldsFuncSeq(src, func(r rune) bool { return strings.ContainsRune(" \t\n'\";|&()<>`", r) }) {
		if len(out) == maxLineWords {
			break
		}
		if strings.ContainsAny(w, "/.") {
			// A glob is judged as itself and by a name it may match:
			// ~/.ssh/id_* by ~/.ssh/id_x, which is a private key's.
			out = append(out, w)
			if strings.Contains(w, "*") {
				out = append(out, strings.ReplaceAll(w, "*", "x"))
			}
		}
	}
	return out
}

// leakSink is where a line's data may go ("send" and the program, or
// "write" and the file), or, for a secret, what prints it; cmd is the
// index of the command in the line.
type leakSink struct {
	how, to string
	cmd     int
}

// storeInput judges text a data store reads on its input as the commands
// it holds: a key-value client's lines each as that client given the line
// as arguments, a JavaScript shell's as its --eval.
func (a *Analyzer) storeInput(name, text string, via []string) {
	switch storeClients[name] {
	case "kv":
		for l := range strings.Lines(text) {
			if f := strings.Fields(l); len(f) > 0 {
				a.add(rules.Command{Name: name, Args: f, Via: via})
			}
		}
	case "js":
		a.add(rules.Command{Name: name, Args: []string{"--eval", text}, Via: via})
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
func (a *Analyzer) endlessLoop(until bool, cond, body []*syntax.Stmt, via []string) {
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
				if len(n.Args) > 0 && shell.WordArg(n.Args[0]).Text == "wait" {
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
	switch shell.WordArg(ce.Args[0]).Text {
	case "true", ":", "/bin/true", "/usr/bin/true":
		return !until
	case "false", "/bin/false", "/usr/bin/false":
		return until
	}
	return false
}

// Facts of the flows of data this file adds for what leaves the tree or
// empties it.
const (
	factEmpties      = "@empties"       // args: the file a redirection empties (: > f, > f, cat /dev/null > f)
	factFetchExtract = "@fetch-extract" // args: the program that unpacks a download into the tree, the download
	factRunsRemote   = "@runs-remote"   // args: the package runner, the URL or repository it fetches what it runs from
	factNetShell     = "@net-shell"     // args: the shell or interpreter, the /dev/tcp or /dev/udp path its input or output is
)

// Sources of secrets that are not files, as a leak's read names them.
const (
	secretEnv      = "<environment>"     // env, printenv, set, export -p: every variable, tokens included
	secretHelper   = "<credentials>"     // a credential helper's or a secret store's output
	secretVariable = "<secret-variable>" // echo $AWS_SECRET_ACCESS_KEY
)

// secretHelpers lists, for programs that print secrets when asked, the
// starts of the argument lines that ask (git credential fill, gh auth
// token); an empty start means every use of the program.
var secretHelpers = map[string][]string{
	"git": {"credential fill", "credential-store get", "credential-cache get", "credential-manager get", "credential-manager-core get",
		"credential-osxkeychain get", "credential-libsecret get", "credential-wincred get", "config --get-regexp"},
	"gpg":           {"--export-secret-keys", "--export-secret-subkeys", "-a --export-secret-keys", "--armor --export-secret-keys", "-a --export-secret-subkeys", "--armor --export-secret-subkeys"},
	"gh":            {"auth token", "auth status -t", "auth status --show-token"},
	"glab":          {"auth token", "config get token"},
	"aws":           {"configure export-credentials", "configure get", "sts get-session-token", "sts assume-role", "sts get-federation-token", "ecr get-login-password", "secretsmanager get-secret-value", "ssm get-parameter"},
	"gcloud":        {"auth print-access-token", "auth print-identity-token", "auth application-default print-access-token", "secrets versions access", "config config-helper"},
	"az":            {"account get-access-token", "keyvault secret show", "keyvault secret download", "acr login --expose-token"},
	"kubectl":       {"config view --raw", "get secret", "get secrets", "create token", "describe secret"},
	"oc":            {"whoami -t", "whoami --show-token", "get secret", "config view --raw"},
	"vault":         {"read", "kv get", "token create", "print token", "login"},
	"op":            {"read", "item get", "inject", "signin --raw"},
	"bw":            {"get", "export"},
	"lpass":         {"show", "export"},
	"pass":          {"show", ""},
	"gopass":        {"show", "cat"},
	"security":      {"find-generic-password", "find-internet-password", "dump-keychain"},
	"secret-tool":   {"lookup"},
	"doppler":       {"secrets"},
	"heroku":        {"auth:token", "config"},
	"npm":           {"token list", "config get //"},
	"docker":        {"login --password-stdin"},
	"pulumi":        {"config --show-secrets", "stack output --show-secrets", "stack export --show-secrets"},
	"ansible-vault": {"view", "decrypt"},
	"firebase":      {"auth:export"},
	"airflow":       {"variables export", "connections export", "connections get"},
	"terraform":     {"output -json", "output -raw"},
	// A database's dump is its data: users, customers, their secrets.
	"pg_dump": {""}, "pg_dumpall": {""}, "mysqldump": {""}, "mariadb-dump": {""}, "mongoexport": {""}, "redis-cli": {"--rdb"},
}

// envDumps print every variable of the environment when given no operand.
var envDumps = setOf(`env printenv set export declare typeset compgen history`)

// secretSource names the secret c prints, or returns "" when it prints
// none the gate knows of: an environment dump, a credential helper, or a
// variable whose name says it holds a secret echoed or printed.
func secretSource(c *rules.Command) string {
	switch {
	case envDumps[c.Name]:
		if len(c.Args) == 0 && printsOnly(c.Source) || c.Name == "printenv" && len(c.Args) > 0 && secretName(c.Args[0]) {
			return secretEnv
		}
	case c.Name == "jq":
		for _, x := range c.Args {
			if x == "env" || strings.HasPrefix(x, "$ENV") || strings.HasPrefix(x, "env|") || strings.HasPrefix(x, "env |") {
				return secretEnv
			}
		}
	case c.Name == "echo" || c.Name == "printf":
		for _, x := range c.Args {
			if strings.Contains(x, "$") && secretName(x) {
				return secretVariable
			}
		}
	case strings.HasPrefix(c.Name, "docker-credential-") || strings.HasPrefix(c.Name, "git-credential-"):
		return secretHelper
	default:
		for _, start := range secretHelperWords[c.Name] {
			if len(start) == 0 && len(c.Args) > 0 || len(start) > 0 && len(c.Args) >= len(start) && slices.Equal(c.Args[:len(start)], start) {
				return secretHelper
			}
		}
	}
	return ""
}

// secretHelperWords is secretHelpers with each start split into words,
// so a check compares words and builds no string.
var secretHelperWords = func() map[string][][]string {
	m := make(map[string][][]string, len(secretHelpers))
	for name, starts := range secretHelpers {
		for _, s := range starts {
			m[name] = append(m[name], strings.Fields(s))
		}
	}
	return m
}()

// printsOnly reports whether source, the text of a command whose
// program is an environment dump, runs nothing else: env A=1 prints the
// environment, env A=1 make runs make.
func printsOnly(source string) bool {
	f := strings.Fields(source)
	for _, w := range f[min(1, len(f)):] {
		if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
			return false
		}
	}
	return true
}

// secretName reports whether a variable name (or a word that expands
// one) says it holds a secret: a token, a password, a key.
func secretName(s string) bool {
	u := strings.ToUpper(s)
	for _, w := range []string{"SECRET", "TOKEN", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "PRIVATE_KEY", "ACCESS_KEY", "CREDENTIAL", "AUTH",
		"DATABASE_URL", "DSN", "CONNECTION_STRING", "PGPASSWORD", "MYSQL_PWD"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// sends reports whether c, a program of the senders or fetchers, sends:
// openssl does only as a TLS client (s_client), the rest always.
func sends(c *rules.Command) bool {
	return c.Name != "openssl" || len(c.Args) > 0 && c.Args[0] == "s_client"
}

// sendsSecretVariable reports whether the arguments of a network client
// carry a variable whose name says it holds a secret anywhere but where
// a credential is presented to the service it is for: an authentication
// header (-H "Authorization: Bearer $TOKEN"), a user (-u user:$PASSWORD).
// In a URL, another header or a body, it goes to whoever the line names.
// A key that is only ever used to sign (AWS_SECRET_ACCESS_KEY) or a
// private key is never sent as it is, so it counts wherever it is.
func sendsSecretVariable(args []string) bool {
	for i, x := range args {
		if !strings.Contains(x, "$") || !secretName(x) {
			continue
		}
		if neverSent(x) {
			return true
		}
		prev := ""
		if i > 0 {
			prev = args[i-1]
		}
		if !presentsCredential(prev, x) || !forItsService(x, args) {
			return true
		}
	}
	return false
}

// tokenServices maps the start of a well-known token's variable name to
// the domains of the service that issues it: presented anywhere else (-H
// "Authorization: Bearer $GITHUB_TOKEN" to another host), it is sent to
// whoever runs that host.
var tokenServices = []struct{ prefix, domains string }{
	{"GITHUB", "github.com githubusercontent.com ghcr.io"}, {"GH_", "github.com githubusercontent.com ghcr.io"},
	{"GITLAB", "gitlab.com"}, {"NPM", "npmjs.org npmjs.com"}, {"PYPI", "pypi.org"},
	{"OPENAI", "openai.com"}, {"ANTHROPIC", "anthropic.com"}, {"HF_", "huggingface.co"}, {"HUGGING", "huggingface.co"},
	{"SLACK", "slack.com"}, {"STRIPE", "stripe.com"}, {"CLOUDFLARE", "cloudflare.com"}, {"CF_", "cloudflare.com"},
	{"DIGITALOCEAN", "digitalocean.com"}, {"VERCEL", "vercel.com"}, {"NETLIFY", "netlify.com"},
	{"SENTRY", "sentry.io"}, {"DOCKER", "docker.io docker.com"}, {"HEROKU", "heroku.com"},
}

// forItsService reports whether the credential in x, presented in args,
// goes only to the service it is for: false when its name says which
// service issued it and a URL of the line is another's host. A name no
// service is known for is taken as presented where it belongs.
func forItsService(x string, args []string) bool {
	name := strings.ToUpper(x[strings.IndexByte(x, '$')+1:])
	name = strings.TrimLeft(name, "{")
	var domains string
	for _, t := range tokenServices {
		if strings.HasPrefix(name, t.prefix) {
			domains = t.domains
			break
		}
	}
	if domains == "" {
		return true
	}
	for _, a := range args {
		a = strings.Trim(a, `'"`)
		rest, ok := strings.CutPrefix(a, "https://")
		if !ok {
			if rest, ok = strings.CutPrefix(a, "http://"); !ok {
				continue
			}
		}
		host, _, _ := strings.Cut(rest, "/")
		host, _, _ = strings.Cut(host, ":")
		if !slices.ContainsFunc(strings.Fields(domains), func(d string) bool { return host == d || strings.HasSuffix(host, "."+d) }) {
			return false
		}
	}
	return true
}

// neverSent reports whether a word names a secret that no service
// receives as it is: a signing key or a private key.
func neverSent(s string) bool {
	u := strings.ToUpper(s)
	return strings.Contains(u, "SECRET_ACCESS_KEY") || strings.Contains(u, "PRIVATE_KEY") || strings.Contains(u, "SECRET_KEY")
}

// presentsCredential reports whether x, after the argument prev, is a
// credential presented as credentials are: the value of -u/--user (or
// --oauth2-bearer, --password …), or a header whose name says it
// authenticates (curl -H, wget --header, httpie's Name:value).
func presentsCredential(prev, x string) bool {
	switch prev {
	case "-u", "--user", "--proxy-user", "-U", "--oauth2-bearer", "--password", "--http-password", "--proxy-password", "--auth", "-a":
		return true
	}
	for _, o := range []string{"--user=", "--proxy-user=", "--oauth2-bearer=", "--password=", "--http-password=", "--auth="} {
		if strings.HasPrefix(x, o) {
			return true
		}
	}
	if strings.HasPrefix(x, "-u") && !strings.HasPrefix(x, "--") {
		return true // -uuser:$PASSWORD
	}
	header := x
	switch {
	case prev == "-H" || prev == "--header" || prev == "--proxy-header":
	case strings.HasPrefix(x, "--header="):
		header = x[len("--header="):]
	case strings.HasPrefix(x, "-H"):
		header = x[2:]
	}
	name, _, ok := strings.Cut(strings.Trim(header, `'"`), ":")
	if !ok || strings.ContainsAny(name, "/$ ") {
		return false
	}
	name = strings.ToLower(name)
	for _, w := range []string{"auth", "token", "key", "cookie", "session"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// printsNothing reports whether a statement whose output is redirected
// prints nothing, so the redirection only empties its target: no command
// at all (> f), : or true, cat or cp of /dev/null, echo -n.
func printsNothing(st *syntax.Stmt, in *stmtInfo) bool {
	if st.Cmd == nil {
		return true
	}
	if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) == 1 && call.Args[0].Lit() == "exec" {
		return true // exec > FILE: the shell's own output moved there
	}
	if in.printsOK {
		return strings.TrimSpace(in.prints) == ""
	}
	if in.final == nil {
		return false
	}
	switch in.final.Name {
	case ":", "true", "false":
		return true
	case "cat":
		return len(in.final.Args) == 1 && in.final.Args[0] == "/dev/null"
	case "head", "tail":
		return zeroCount(in.final.Args)
	}
	return false
}

// zeroCount reports whether args hold head's or tail's option asking
// for no bytes or lines at all (-c 0, -c0, --bytes=0): the command
// prints nothing, and its redirection only empties its target.
func zeroCount(args []string) bool {
	for i, a := range args {
		for _, opt := range []string{"-c", "-n", "--bytes=", "--lines=", "--bytes", "--lines"} {
			v, ok := strings.CutPrefix(a, opt)
			if !ok {
				continue
			}
			if v == "" && !strings.HasSuffix(opt, "=") && i+1 < len(args) {
				v = args[i+1]
			}
			if v != "" && strings.Trim(v, "0") == "" {
				return true
			}
		}
	}
	return false
}

// extractsArchive reports whether c unpacks an archive into the tree.
func extractsArchive(c *rules.Command) bool {
	switch c.Name {
	case "unzip", "funzip", "jar":
		return c.Name != "jar" || len(c.Args) > 0 && strings.Contains(c.Args[0], "x")
	case "cpio":
		return slices.ContainsFunc(c.Args, func(a string) bool {
			return a == "--extract" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a, "i")
		})
	case "7z", "7za", "7zz":
		return len(c.Args) > 0 && (c.Args[0] == "x" || c.Args[0] == "e")
	case "tar", "bsdtar", "gtar":
		for i, a := range c.Args {
			switch {
			case a == "--extract" || a == "--get":
				return true
			case strings.HasPrefix(a, "--"):
			case strings.HasPrefix(a, "-") || i == 0:
				if strings.Contains(a, "x") {
					return true
				}
			}
		}
	}
	return false
}

// fetchedUse records, as the fact named, the first command uses picks
// that is given a file downloaded earlier in the line (curl -o x.zip,
// wget URL, curl URL > f): an archive unpacked into the tree
// (extractsArchive), a package file installed (installs).
func (a *Analyzer) fetchedUse(fetched map[string]bool, uses func(*rules.Command) bool, fact string) {
	if len(fetched) == 0 {
		return
	}
	for i := range a.cmds {
		c := &a.cmds[i]
		if !uses(c) {
			continue
		}
		for _, x := range c.Args {
			if !strings.HasPrefix(x, "-") && fetched[path.Base(x)] {
				a.fact(fact, c.Via, c.Name, x)
				return
			}
		}
	}
}

// installers install the package files they are given: their install
// scripts (a gem's extensions, a wheel's or a tarball's build, a
// package's maintainer scripts) run as they install.
var installers = setOf(`pip pip3 pipx uv gem npm pnpm yarn bun dpkg apt apt-get rpm dnf yum zypper pacman snap code codium cargo helm`)

// installs reports whether c is a package installer.
func installs(c *rules.Command) bool { return installers[c.Name] }
