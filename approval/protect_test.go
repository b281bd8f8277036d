package approval

import (
	"slices"
	"testing"
)

// protectedGate is a Gate with runbox's default protection for a user
// whose home is /home/user, RUNBOX_CONFIG naming /etc/runbox/policy.yaml,
// and approvals saved to /srv/approvals.yaml.
func protectedGate(t *testing.T, opts Options) *Gate {
	t.Helper()
	opts.Protect = DefaultProtection(testEnv(map[string]string{
		"HOME":          "/home/user",
		"RUNBOX_CONFIG": "/etc/runbox/policy.yaml",
	}))
	opts.ConfigFile = "/srv/approvals.yaml"
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// want is the expected verdict of a row: a hardline denial, a denial, a
// question, or allow.
type want int

const (
	wantHardline want = iota
	wantDeny
	wantAsk
	wantAllow
)

func (w want) check(v Verdict) bool {
	switch w {
	case wantHardline:
		return v.Decision == Deny && v.Hardline
	case wantDeny:
		return v.Decision == Deny && !v.Hardline
	case wantAsk:
		return v.Decision == Ask
	}
	return v.Decision == Allow
}

func (w want) String() string {
	return [...]string{"hardline deny", "deny", "ask", "allow"}[w]
}

// TestGate_ProtectedPaths: no spelling of a write lets a command change the
// gate's own policy (hardline) or state (denied), a write whose place is
// not known but whose tail could be protected asks, and reads stay
// allowed. A failure is a way for a command to weaken the policy that
// judges the next one.
func TestGate_ProtectedPaths(t *testing.T) {
	g := protectedGate(t, Options{})
	tests := []struct {
		cmd  string
		want want
	}{
		// redirections
		{"echo 'approval: {mode: off}' >> ~/.config/runbox/config.yaml", wantHardline},
		{"echo x > ~/.config/runbox/config.yaml", wantHardline},
		{"echo x >| ~/.config/runbox/config.yaml", wantHardline},
		{"echo x &> ~/.config/runbox/config.yaml", wantHardline},
		{"echo x &>> ~/.config/runbox/config.yaml", wantHardline},
		{"exec 3<> ~/.config/runbox/config.yaml", wantHardline},
		{": > ~/.config/runbox/config.yaml", wantHardline},
		// tee and here-strings
		{"echo x | tee ~/.config/runbox/config.yaml", wantHardline},
		{"echo x | sudo tee -a ~/.config/runbox/config.yaml > /dev/null", wantHardline},
		{"tee -a ~/.config/runbox/config.yaml <<< 'approval: {mode: off}'", wantHardline},
		{"tee ~/.config/runbox/config.yaml <<EOF\napproval:\n  mode: off\nEOF", wantHardline},
		// copies, moves, links
		{"cp /tmp/evil.yaml ~/.config/runbox/config.yaml", wantHardline},
		{"cp /tmp/config.yaml ~/.config/runbox/", wantHardline},
		{"cp -t ~/.config/runbox /tmp/config.yaml", wantHardline},
		{"mv /tmp/evil.yaml ~/.config/runbox/config.yaml", wantHardline},
		{"mv ~/.config/runbox/config.yaml /tmp/", wantHardline},
		{"install -m 600 /tmp/evil.yaml ~/.config/runbox/config.yaml", wantHardline},
		{"ln -sf /tmp/evil.yaml ~/.config/runbox/config.yaml", wantHardline},
		{"rsync -a /tmp/evil.yaml ~/.config/runbox/config.yaml", wantHardline},
		{"cp -r /tmp/runbox ~/.config/", wantHardline},
		// deletes and truncation
		{"rm ~/.config/runbox/config.yaml", wantHardline},
		{"rm -f ~/.config/runbox/config.yaml", wantHardline},
		{"unlink ~/.config/runbox/config.yaml", wantHardline},
		{"shred -u ~/.config/runbox/config.yaml", wantHardline},
		{"truncate -s 0 ~/.config/runbox/config.yaml", wantHardline},
		{"rm -rf ~/.config/runbox", wantHardline},
		{"rm -rf ~/.config", wantHardline},
		{"mv ~/.config ~/.config.old", wantHardline},
		{"find ~/.config/runbox -delete", wantHardline},
		{"find ~/.config -name '*.yaml' -exec rm {} +", wantHardline},
		{"rsync -a --delete empty/ ~/.config/runbox/", wantHardline},
		// in-place editors
		{"sed -i 's/manual/off/' ~/.config/runbox/config.yaml", wantHardline},
		{"perl -pi -e 's/manual/off/' ~/.config/runbox/config.yaml", wantHardline},
		{"yq -i '.approval.mode = \"off\"' ~/.config/runbox/config.yaml", wantHardline},
		{"dd if=/tmp/evil of=~/.config/runbox/config.yaml", wantHardline},
		{"dd if=/tmp/evil of=$HOME/.config/runbox/config.yaml", wantHardline},
		{"vim ~/.config/runbox/config.yaml", wantHardline},
		// modes, owners, new files
		{"chmod 666 ~/.config/runbox/config.yaml", wantHardline},
		{"chmod -w ~/.config/runbox/config.yaml", wantHardline},
		{"chown nobody ~/.config/runbox/config.yaml", wantHardline},
		{"chmod -R 700 ~/.config/runbox", wantHardline},
		{"chmod -R 777 ~/.config", wantAsk},
		{"touch ~/.config/runbox/extra.yaml", wantHardline},
		{"mkdir ~/.config/runbox/conf.d", wantHardline},
		{"tar -xf /tmp/evil.tar -C ~/.config/runbox", wantHardline},
		{"tar -czf ~/.config/runbox/config.yaml /tmp/x", wantHardline},
		// spellings of the path
		{"echo x >> /home/user/.config/runbox/config.yaml", wantHardline},
		{"echo x >> $HOME/.config/runbox/config.yaml", wantHardline},
		{`echo x >> "${HOME}/.config/runbox/config.yaml"`, wantHardline},
		{`echo x >> "$HOME"/.config/runbox/config.yaml`, wantHardline},
		{`echo x >> ${XDG_CONFIG_HOME:-~/.config}/runbox/config.yaml`, wantHardline},
		{`echo x >> "${XDG_CONFIG_HOME:-$HOME/.config}/runbox/config.yaml"`, wantHardline},
		{"echo x >> ~/.config/other/../runbox/config.yaml", wantHardline},
		{"echo x >> ~/.config/runbox/./config.yaml", wantHardline},
		{"echo x >> ~//.config///runbox//config.yaml", wantHardline},
		{"rm -rf ~/.config/runbox/", wantHardline},
		{`echo x >> ~/.config/'runbox'/"config.yaml"`, wantHardline},
		{`echo x >> ~/.config/run\box/config.yaml`, wantHardline},
		{"rm ~/.config/run*/config.yaml", wantHardline},
		{"echo x > ~/.config/runbox/*.yaml", wantHardline},
		{"echo x >> $(echo ~/.config/runbox/config.yaml)", wantHardline},
		// variables assigned in the command, in any order
		{"f=~/.config/runbox/config.yaml; echo x >> $f", wantHardline},
		{`export F="$HOME/.config/runbox/config.yaml" && echo x >> "$F"`, wantHardline},
		{"d=~/.config/runbox; f=$d/config.yaml; rm $f", wantHardline},
		{"for f in ~/.config/runbox/*; do echo x > $f; done", wantHardline},
		{"w() { echo x >> $f; }; f=~/.config/runbox/config.yaml; w", wantHardline},
		// relative paths after cd
		{"cd ~/.config/runbox && echo x >> config.yaml", wantHardline},
		{"cd ~/.config; cd runbox; rm config.yaml", wantHardline},
		{"cd /home/user/.config/runbox; sed -i s/a/b/ config.yaml", wantHardline},
		{"pushd ~/.config/runbox; echo x > config.yaml; popd", wantHardline},
		{"cd ~/.config && cp /tmp/evil.yaml runbox/config.yaml", wantHardline},
		{"cd; echo x >> .config/runbox/config.yaml", wantHardline},
		// nesting and wrappers
		{`bash -c "echo x >> ~/.config/runbox/config.yaml"`, wantHardline},
		{"sudo -u user tee -a ~/.config/runbox/config.yaml < /tmp/x", wantHardline},
		{"eval 'rm ~/.config/runbox/config.yaml'", wantHardline},
		{"echo 'rm ~/.config/runbox/config.yaml' | sh", wantHardline},
		// links made in the command
		{"ln -s ~/.config/runbox /tmp/r && echo x > /tmp/r/config.yaml", wantHardline},
		{"ln -s ~/.config/runbox/config.yaml /tmp/c; echo x >> /tmp/c", wantHardline},
		// the file RUNBOX_CONFIG names and the approvals file
		{"echo x > /etc/runbox/policy.yaml", wantHardline},
		{"echo '- \"*\"' >> /srv/approvals.yaml", wantHardline},
		// the state directory: denied, not asked
		{"echo done > ~/.local/state/runbox/jobs/1/status", wantDeny},
		{"rm -rf ~/.local/state/runbox", wantDeny},
		{"touch ~/.local/state/runbox/x", wantDeny},
		{"mkdir -p $HOME/.local/state/runbox/run", wantDeny},
		// cannot be resolved, but the tail could be protected
		{"echo x >> $X/runbox/config.yaml", wantAsk},
		{"cp /tmp/evil.yaml $UNKNOWN/.config/runbox", wantAsk},
		{"echo x > ~bob/.config/runbox/config.yaml", wantAsk},
		{"cd $D && echo x >> runbox/config.yaml", wantAsk},
		{"echo x >> runbox/config.yaml", wantAsk},
		{"rsync -a conf/ ~/.config/", wantAsk},
		{"cp -r conf/. ~/.config", wantAsk},
		// reads and unrelated writes stay allowed
		{"cat ~/.config/runbox/config.yaml", wantAllow},
		{"less ~/.config/runbox/config.yaml", wantAllow},
		{"cp ~/.config/runbox/config.yaml /tmp/backup.yaml", wantAllow},
		{"diff ~/.config/runbox/config.yaml /tmp/x", wantAllow},
		{"tar -czf /tmp/backup.tgz ~/.config/runbox", wantAllow},
		{"rsync -a ~/.config/runbox/ /tmp/backup/", wantAllow},
		{"ls -la ~/.local/state/runbox", wantAllow},
		{"tail -f ~/.local/state/runbox/jobs/1/output", wantAllow},
		{"echo x >> ~/.config/other/config.yaml", wantAllow},
		{"echo x >> $OUT/config.yaml", wantAllow},
		{"echo x >> config.yaml", wantAllow},
		{"cd /tmp && echo x >> config.yaml", wantAllow},
		{"rm -f build/runbox", wantAllow},
		{"cp -r conf ~/.config/", wantAllow},
		{"mkdir -p ~/.config/nvim", wantAllow},
		{"echo x >> /srv/approvals.yaml.bak", wantAllow},
	}
	for _, tt := range tests {
		v := g.Check(t.Context(), Request{Command: tt.cmd})
		if !tt.want.check(v) {
			t.Errorf("Check(%q) = %s hardline=%v rules=%v; want %s", tt.cmd, v.Decision, v.Hardline, v.Rules, tt.want)
		}
	}
}

// TestGate_ProtectedPathsFromDir: a relative path resolves against the
// directory the request says the command starts in.
func TestGate_ProtectedPathsFromDir(t *testing.T) {
	g := protectedGate(t, Options{})
	tests := []struct {
		dir, cmd string
		want     want
	}{
		{"/home/user/.config/runbox", "echo x >> config.yaml", wantHardline},
		{"/home/user/.config/runbox", "rm -f ./config.yaml", wantHardline},
		{"/home/user/.config", "sed -i s/a/b/ runbox/config.yaml", wantHardline},
		{"/home/user/.config/runbox/sub", "echo x > ../config.yaml", wantHardline},
		{"/home/user/.local/state/runbox", "rm -rf jobs", wantDeny},
		{"/home/user/project", "echo x >> config.yaml", wantAllow},
		{"/home/user/project", "cd ~/.config/runbox && echo x >> config.yaml", wantHardline},
		{"/home/user/.config/runbox", "cat config.yaml", wantAllow},
	}
	for _, tt := range tests {
		v := g.Check(t.Context(), Request{Command: tt.cmd, Dir: tt.dir})
		if !tt.want.check(v) {
			t.Errorf("Check(%q) in %s = %s hardline=%v rules=%v; want %s", tt.cmd, tt.dir, v.Decision, v.Hardline, v.Rules, tt.want)
		}
	}
}

// TestGate_ProtectedPathsInEveryMode: off mode, yolo, relaxed sandboxes and
// allow globs cannot let a command change the policy; a path that may be
// protected still asks.
func TestGate_ProtectedPathsInEveryMode(t *testing.T) {
	for _, opts := range []Options{{Mode: ModeOff}, {Yolo: true}, {RelaxSandboxed: true}, {Allow: []string{"*"}}} {
		g := protectedGate(t, opts)
		req := Request{Sandboxed: true}
		for cmd, w := range map[string]want{
			"echo x >> ~/.config/runbox/config.yaml": wantHardline,
			"rm -rf ~/.local/state/runbox":           wantDeny,
		} {
			req.Command = cmd
			if v := g.Check(t.Context(), req); !w.check(v) {
				t.Errorf("%+v: Check(%q) = %s rules=%v; want %s", opts, cmd, v.Decision, v.Rules, w)
			}
		}
		if opts.Allow != nil {
			continue // a glob allowing everything allows what only asks
		}
		req.Command = "echo x >> $X/runbox/config.yaml"
		if v := g.Check(t.Context(), req); v.Decision != Ask {
			t.Errorf("%+v: Check(%q) = %s; want ask", opts, req.Command, v.Decision)
		}
	}
	if _, err := New(Options{Allow: []string{"protected-policy"}}); err == nil {
		t.Error("New with Allow: protected-policy succeeded; want an error (hardline)")
	}
}

// TestGate_ProtectionZeroValue: with no protection configured only the
// file approvals are saved to is protected.
func TestGate_ProtectionZeroValue(t *testing.T) {
	g := newTestGate(t)
	if v := g.Check(t.Context(), Request{Command: "echo x >> ~/.config/runbox/config.yaml"}); v.Decision != Allow {
		t.Errorf("default gate: Check = %s %v; want allow (nothing protected)", v.Decision, v.Rules)
	}
	g, err := New(Options{ConfigFile: "/srv/approvals.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	v := g.Check(t.Context(), Request{Command: "echo x >> /srv/approvals.yaml"})
	if v.Decision != Deny || !v.Hardline || !slices.Contains(v.Rules, "protected-policy") {
		t.Errorf("gate with a config file: Check = %s %v; want a hardline deny by protected-policy", v.Decision, v.Rules)
	}
	if _, err := New(Options{Protect: Protection{Paths: []ProtectedPath{{Path: "relative/dir"}}}}); err == nil {
		t.Error("New with a relative protected path succeeded; want an error")
	}
}

// TestDefaultProtection_Paths: runbox's own paths follow the variables
// runbox itself reads.
func TestDefaultProtection_Paths(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []ProtectedPath
	}{
		{"home only", map[string]string{"HOME": "/home/u"}, []ProtectedPath{
			{Path: "/home/u/.config/runbox", Dir: true, Policy: true},
			{Path: "/home/u/.local/state/runbox", Dir: true},
		}},
		{"xdg", map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg", "XDG_STATE_HOME": "/st"}, []ProtectedPath{
			{Path: "/cfg/runbox", Dir: true, Policy: true},
			{Path: "/home/u/.config/runbox", Dir: true, Policy: true},
			{Path: "/st/runbox", Dir: true},
		}},
		{"runbox variables", map[string]string{"HOME": "/home/u", "RUNBOX_CONFIG": "/etc/rb.yaml", "RUNBOX_STATE_DIR": "/var/lib/rb", "XDG_STATE_HOME": "/st"}, []ProtectedPath{
			{Path: "/home/u/.config/runbox", Dir: true, Policy: true},
			{Path: "/etc/rb.yaml", Policy: true},
			{Path: "/var/lib/rb", Dir: true},
		}},
		{"no home", map[string]string{}, []ProtectedPath{
			{Path: "~/.config/runbox", Dir: true, Policy: true},
			{Path: "~/.local/state/runbox", Dir: true},
		}},
	}
	for _, tt := range tests {
		p := DefaultProtection(testEnv(tt.env))
		if !slices.Equal(p.Paths, tt.want) {
			t.Errorf("%s: DefaultProtection().Paths = %+v; want %+v", tt.name, p.Paths, tt.want)
		}
		if p.Env["HOME"] != tt.env["HOME"] {
			t.Errorf("%s: Env[HOME] = %q; want %q", tt.name, p.Env["HOME"], tt.env["HOME"])
		}
	}
}

// TestGate_ProtectionWithoutHome: with HOME unknown, ~ and $HOME still
// reach the protected paths given under ~.
func TestGate_ProtectionWithoutHome(t *testing.T) {
	g, err := New(Options{Protect: DefaultProtection(testEnv(nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"echo x >> ~/.config/runbox/config.yaml", "echo x >> $HOME/.config/runbox/config.yaml"} {
		if v := g.Check(t.Context(), Request{Command: cmd}); v.Decision != Deny || !v.Hardline {
			t.Errorf("Check(%q) = %s %v; want hardline deny", cmd, v.Decision, v.Rules)
		}
	}
	if v := g.Check(t.Context(), Request{Command: "echo x >> /home/someone/.config/runbox/config.yaml"}); v.Decision == Allow {
		t.Errorf("absolute path under an unknown home: Check = allow; want it judged by its tail")
	}
}
