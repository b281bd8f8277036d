package walk

import (
	"strings"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
)

// wrapperSpecs lists, for each wrapper, the options that take a value.
var wrapperSpecs = map[string]shell.OptSpec{
	"sudo":            {Short: "ughpCDrtUTR", Long: []string{"--user", "--group", "--host", "--prompt", "--close-from", "--chdir", "--role", "--type", "--other-user", "--command-timeout"}},
	"doas":            {Short: "uC"},
	"pkexec":          {Long: []string{"--user"}},
	"run0":            {Short: "ugD", Long: []string{"--user", "--group", "--chdir", "--unit", "--property", "--description", "--slice", "--nice", "--setenv", "--machine"}},
	"please":          {Short: "ugrdt", Long: []string{"--user", "--group", "--reason", "--dir", "--target"}},
	"env":             {Short: "uCSPa", Long: []string{"--unset", "--chdir", "--split-string", "--argv0", "--default-signal", "--ignore-signal", "--block-signal"}},
	"nice":            {Short: "n", Long: []string{"--adjustment"}},
	"time":            {Short: "fo", Long: []string{"--format", "--output"}},
	"stdbuf":          {Short: "ioe", Long: []string{"--input", "--output", "--error"}},
	"exec":            {Short: "a"},
	"timeout":         {Short: "sk", Long: []string{"--signal", "--kill-after"}},
	"chroot":          {Long: []string{"--userspec", "--groups"}},
	"chrt":            {},
	"taskset":         {},
	"ionice":          {Short: "cnpPut", Long: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}},
	"xargs":           {Short: "aEdILnPs", Long: []string{"--arg-file", "--delimiter", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}},
	"watch":           {Short: "nq", Long: []string{"--interval", "--equexit"}},
	"flock":           {Short: "wEc", Long: []string{"--wait", "--timeout", "--conflict-exit-code", "--command"}},
	"su":              {Short: "cgGsw", Long: []string{"--command", "--group", "--supp-group", "--shell", "--whitelist-environment", "--session-command"}},
	"runuser":         {Short: "cgGsuw", Long: []string{"--command", "--group", "--supp-group", "--shell", "--user", "--whitelist-environment", "--session-command"}},
	"script":          {Short: "cEIOBTm", Long: []string{"--command", "--echo", "--log-in", "--log-out", "--log-io", "--log-timing", "--logging-format"}},
	"ssh":             {Short: "bcDEeFIiJLlmOopQRSWwBP"},
	"strace":          {Short: "oepsuEabIOSXP"},
	"ltrace":          {Short: "oepsuEaAnS"},
	"unshare":         {Short: "SGRw", Long: []string{"--setuid", "--setgid", "--root", "--wd", "--propagation"}},
	"nsenter":         {Short: "tSGrw", Long: []string{"--target", "--setuid", "--setgid"}},
	"systemd-run":     {Short: "upEHMD", Long: []string{"--unit", "--property", "--description", "--slice", "--setenv", "--host", "--machine", "--uid", "--gid", "--nice", "--working-directory", "--on-active", "--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive", "--on-calendar", "--timer-property", "--path-property", "--socket-property", "--service-type"}},
	"xvfb-run":        {Short: "nsfepl", Long: []string{"--server-num", "--server-args", "--auth-file", "--error-file", "--xauth-protocol"}},
	"caffeinate":      {Short: "tw"},
	"proxychains":     {Short: "f"},
	"proxychains4":    {Short: "f"},
	"torsocks":        {Short: "uapP"},
	"numactl":         {Short: "CNmpiP", Long: []string{"--physcpubind", "--cpunodebind", "--membind", "--preferred", "--interleave"}},
	"cgexec":          {Short: "g"},
	"systemd-inhibit": {Long: []string{"--what", "--who", "--why", "--mode"}},
	"setpriv":         {Long: []string{"--reuid", "--regid", "--groups", "--inh-caps", "--bounding-set", "--securebits", "--selinux-label", "--apparmor-profile"}},
	"chpst":           {Short: "ugUenlmdofcpb"},
	"cp":              {Short: "tS", Long: []string{"--target-directory", "--suffix", "--mode", "--owner", "--group"}},
}

// subcommandSpecs lists tools whose first operand is a subcommand, with the
// global options that take a value. Rules then see the subcommand first.
var subcommandSpecs = map[string]shell.OptSpec{
	"git":            {Short: "Cc", Long: []string{"--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--attr-source", "--exec-path"}},
	"docker":         dockerSpec,
	"podman":         dockerSpec,
	"nerdctl":        dockerSpec,
	"docker-compose": dockerSpec,
	"podman-compose": dockerSpec,
	"npm":            {Short: "wC", Long: []string{"--prefix", "--workspace", "--cache", "--registry", "--userconfig", "--loglevel"}},
	"pnpm":           {Short: "CF", Long: []string{"--dir", "--filter", "--workspace-dir", "--loglevel"}},
	"yarn":           {Long: []string{"--cwd", "--modules-folder", "--cache-folder", "--registry"}},
	"bun":            {Long: []string{"--cwd", "--config"}},
	"brew":           {},
	"apt":            {Short: "otc", Long: []string{"--option", "--target-release", "--config-file"}},
	"apt-get":        {Short: "otc", Long: []string{"--option", "--target-release", "--config-file"}},
	"aptitude":       {Short: "ot", Long: []string{"--target-release"}},
	"yum":            {Short: "cdex", Long: []string{"--config", "--installroot", "--releasever", "--setopt", "--exclude", "--repo", "--enablerepo", "--disablerepo"}},
	"dnf":            {Short: "cdex", Long: []string{"--config", "--installroot", "--releasever", "--setopt", "--exclude", "--repo", "--enablerepo", "--disablerepo"}},
	"microdnf":       {},
	"tdnf":           {},
	"zypper":         {Short: "r", Long: []string{"--root", "--repo", "--config"}},
	"apk":            {Short: "Xp", Long: []string{"--repository", "--root", "--arch", "--cache-dir", "--keys-dir"}},
	"pip":            {Long: []string{"--python", "--proxy", "--cache-dir", "--log", "--retries", "--timeout"}},
	"pipx":           {},
	"uv":             {Long: []string{"--directory", "--project", "--python", "--cache-dir", "--config-file", "--color"}},
	"gem":            {},
	"cargo":          {Short: "Z", Long: []string{"--manifest-path", "--config", "--color"}},
	"snap":           {},
	"flatpak":        {},
	"conda":          {},
	"mamba":          {},
	"micromamba":     {},
	"port":           {},
	"choco":          {},
	"winget":         {},
	"scoop":          {},
	"composer":       {Short: "d", Long: []string{"--working-dir"}},
	"poetry":         {Short: "C", Long: []string{"--directory", "--project"}},
	"pdm":            {Short: "p", Long: []string{"--project"}},
	"rustup":         {},
	"aws":            {Long: []string{"--profile", "--region", "--endpoint-url", "--output", "--query", "--ca-bundle", "--cli-read-timeout", "--cli-connect-timeout", "--color"}},
	"terraform":      {},
	"tofu":           {},
	"kubectl":        {Short: "ns", Long: []string{"--namespace", "--context", "--kubeconfig", "--cluster", "--user", "--server"}},
	"helm":           {Short: "n", Long: []string{"--namespace", "--kube-context", "--kubeconfig"}},
}

// dockerSpec serves docker and the CLIs that copy its options (podman, nerdctl).
var dockerSpec = shell.OptSpec{Short: "Hcl", Long: []string{"--host", "--context", "--config", "--log-level", "--tlscacert", "--tlscert", "--tlskey", "--connection", "--url", "--identity", "--root", "--runroot", "--storage-driver", "--storage-opt", "--cgroup-manager", "--events-backend", "--runtime", "--tmpdir", "--module", "--namespace", "--address", "--snapshotter"}}

var composeSpec = shell.OptSpec{Short: "fp", Long: []string{"--file", "--project-name", "--profile", "--env-file", "--project-directory", "--ansi", "--parallel", "--progress"}}

var dockerSubcommands = setOf(`attach build builder buildx checkpoint commit compose config container context cp
	create diff events exec export history image images import info init inspect kill load login logout logs
	manifest network node pause plugin port ps pull push rename restart rm rmi run save search secret service
	stack start stats stop swarm system tag top trust unpause update version volume wait machine pod generate
	play kube healthcheck mount unmount unshare untag farm artifact quadlet scout debug sbom`)

// fetchers are programs that fetch remote content.
var fetchers = setOf(`curl wget fetch aria2c http https xh httpie lynx links elinks w3m nc ncat netcat socat
	ftp tftp invoke-webrequest iwr invoke-restmethod irm`)

// isDecoder reports whether c decodes or decompresses its input.
func isDecoder(c *rules.Command) bool {
	switch c.Name {
	case "uudecode", "gunzip", "zcat", "bzcat", "xzcat", "unxz", "bunzip2", "zstdcat", "unzstd", "rev":
		return true
	case "base64", "base32", "basenc", "openssl", "gzip", "xz", "bzip2", "zstd", "brotli":
		for _, a := range c.Args {
			if a == "-d" || a == "-D" || a == "--decode" || a == "--decompress" || a == "-base64" && c.Name == "openssl" {
				return true
			}
		}
	case "xxd":
		for _, a := range c.Args {
			if strings.HasPrefix(a, "-r") {
				return true
			}
		}
	}
	return false
}

// initTools print shell code for a shell to evaluate as their documented
// use: eval "$(ssh-agent -s)", source <(kubectl completion bash).
var initTools = setOf(`ssh-agent pyenv rbenv nodenv jenv goenv plenv direnv brew conda mamba micromamba fnm
	zoxide starship mise rtx asdf kubectl helm gh dircolors opam thefuck atuin register-python-argcomplete
	rustup poetry uv npm pip pip3 gcloud aws aws_completer minikube kind docker podman terraform just
	deno bun cargo luarocks keychain gpg-agent dbus-launch resize tput locale nvm sdk`)

var shells = setOf(`bash sh zsh dash ksh mksh ash fish yash posh csh tcsh rbash ksh93 pdksh oksh busybox-sh`)

// IsShell reports whether name is a shell, which runs code given with -c
// or read from its input.
func IsShell(name string) bool { return shells[name] }

// interpKind groups interpreters by how they take inline code.
func interpKind(name string) string {
	switch {
	case strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy"):
		if strings.Trim(strings.TrimPrefix(strings.TrimPrefix(name, "python"), "pypy"), "0123456789.") == "" {
			return "python"
		}
	case name == "node" || name == "nodejs":
		return "node"
	case name == "bun" || name == "deno" || name == "perl" || name == "ruby" || name == "php":
		return name
	case strings.HasPrefix(name, "php") && strings.Trim(name[3:], "0123456789.") == "":
		return "php"
	case strings.HasPrefix(name, "perl5") || strings.HasPrefix(name, "ruby") && strings.Trim(name[4:], "0123456789.") == "":
		return name[:4]
	case name == "lua" || name == "luajit" || strings.HasPrefix(name, "lua5") || name == "rscript" ||
		name == "julia" || name == "osascript" || name == "groovy" || name == "jrunscript" || name == "irb":
		return "eflag"
	case name == "pwsh" || name == "powershell" || name == "pwsh-preview":
		return "powershell"
	case name == "iex" || name == "invoke-expression":
		// PowerShell's eval: iwr URL | iex runs what was fetched.
		return "powershell"
	case name == "cmd":
		return "cmd"
	}
	return ""
}

// sqlKeywords are SQL statements typed as if they were commands. A word
// counts as SQL when it is in upper case (DROP TABLE t) or followed by one
// of sqlObjects (drop table t); "truncate -s 0 f" is the coreutils program.
var sqlKeywords = setOf(`drop truncate delete update alter`)

var sqlObjects = setOf(`table database schema index view user role function procedure trigger sequence
	materialized extension from only if keyspace collection owned`)

// sqlClients maps database clients to the options that carry SQL.
var sqlClients = map[string]string{
	"psql":              "-c --command",
	"mysql":             "-e --execute",
	"mariadb":           "-e --execute",
	"sqlite3":           "-cmd",
	"duckdb":            "-c -cmd",
	"clickhouse-client": "-q --query",
	"clickhouse":        "-q --query",
	"sqlcmd":            "-Q -q",
	"cockroach":         "-e --execute",
	"cqlsh":             "-e --execute",
	"snowsql":           "-q --query",
	"bq":                "",
}

func setOf(list string) map[string]bool {
	m := make(map[string]bool)
	for _, f := range strings.Fields(list) {
		m[f] = true
	}
	return m
}

// passwordUsers returns the users of chpasswd's input lines (user:password).
func passwordUsers(text string) []string {
	var users []string
	for l := range strings.Lines(text) {
		if u, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && u != "" {
			users = append(users, u)
		}
	}
	return users
}
