package spawn

import (
	"fmt"
	"strings"
)

// Policy says which inherited variables a child may see. Every list holds
// patterns: a name in which '*' matches any run of characters (possibly
// empty) and every other character stands for itself, so an exact name is a
// pattern without '*'. A pattern may not be empty or contain '=' or NUL.
//
// The zero Policy is the default policy: it is what [DefaultPolicy] returns.
// The always-strip list (see [AlwaysStrip]) is not a field: it is applied to
// every build and configuration can only add to it, never remove from it.
type Policy struct {
	// Block lists the names a child does not get unless Passthrough names
	// them. Matching ignores ASCII case. Empty (nil or zero length) means the
	// default list, [DefaultBlock]; there is no way to block nothing here, on
	// purpose: a caller that wants every blocked name passed must say so
	// with Passthrough: []string{"*"}.
	Block []string

	// ExtraBlock is added to Block. It lets configuration extend the default
	// list without restating it. Nil adds nothing.
	ExtraBlock []string

	// ExtraStrip is added to the always-strip list: names no Passthrough and
	// no RUNBOX_FORCE_ key can hand to a child. Matching ignores ASCII case.
	// Nil adds nothing.
	ExtraStrip []string

	// Passthrough lists the blocked names a child may inherit. Matching is
	// exact (case-sensitive), so passing GITHUB_TOKEN does not pass
	// github_token. A Passthrough entry never lets an always-strip name
	// through. Nil passes nothing.
	Passthrough []string
}

// DefaultPolicy returns the default policy with its Block list filled in,
// as a fresh value the caller may change. Build treats it exactly like the
// zero Policy.
func DefaultPolicy() Policy {
	return Policy{Block: DefaultBlock()}
}

// alwaysStrip is the floor of names no configuration can hand to a child.
// Keep it to credentials of runbox itself and of the things runbox drives on
// the agent's behalf; see doc.go for the split against defaultBlock.
var alwaysStrip = [...]string{
	// runbox's own server and client credentials.
	"RUNBOX_*TOKEN*",
	"RUNBOX_*SECRET*",
	"RUNBOX_*API_KEY*",
	"RUNBOX_*PASSWORD*",
	// Cloud sandboxes runbox provisions: a child holding these could create,
	// enter or delete sandboxes, including the one it runs in.
	"MODAL_TOKEN_*",
	"DAYTONA_API_KEY",
	"DAYTONA_*TOKEN*",
	"E2B_API_KEY",
	"E2B_ACCESS_TOKEN",
	"RUNLOOP_API_KEY",
	// sudo secrets: a password, or a helper program that answers for one.
	"SUDO_*PASS*",
	"*_SUDO_*PASS*",
	// Chat platforms the agent talks through: a child holding these could
	// speak as the agent.
	"SLACK_*TOKEN*",
	"SLACK_*SECRET*",
	"TELEGRAM_*TOKEN*",
	"DISCORD_*TOKEN*",
	"DISCORD_*SECRET*",
	"MATRIX_*TOKEN*",
	"MATRIX_*PASSWORD*",
	"MATTERMOST_*TOKEN*",
	"WHATSAPP_*TOKEN*",
}

// defaultBlock is the default Block list: credentials a user's own code may
// legitimately need, so a Passthrough entry or a RUNBOX_FORCE_ key may hand
// them over by name.
var defaultBlock = [...]string{
	// Model providers.
	"ANTHROPIC_API_KEY",
	"ANTHROPIC_AUTH_TOKEN",
	"AZURE_OPENAI_API_KEY",
	"CLAUDE_CODE_OAUTH_TOKEN",
	"COHERE_API_KEY",
	"DEEPSEEK_API_KEY",
	"FIREWORKS_API_KEY",
	"GEMINI_API_KEY",
	"GOOGLE_API_KEY",
	"GROQ_API_KEY",
	"HF_TOKEN",
	"HUGGING_FACE_HUB_TOKEN",
	"HUGGINGFACEHUB_API_TOKEN",
	"MISTRAL_API_KEY",
	"OPENAI_API_KEY",
	"OPENROUTER_API_KEY",
	"PERPLEXITY_API_KEY",
	"REPLICATE_API_TOKEN",
	"TOGETHER_API_KEY",
	"VOYAGE_API_KEY",
	"XAI_API_KEY",
	// Code hosting, clouds and package registries.
	"AWS_ACCESS_KEY_ID",
	"AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN",
	"AZURE_CLIENT_SECRET",
	"CARGO_REGISTRY_TOKEN",
	"CLOUDFLARE_API_TOKEN",
	"DIGITALOCEAN_ACCESS_TOKEN",
	"DOCKER_PASSWORD",
	"GH_TOKEN",
	"GITHUB_TOKEN",
	"GITLAB_TOKEN",
	"GOOGLE_APPLICATION_CREDENTIALS",
	"NODE_AUTH_TOKEN",
	"NPM_TOKEN",
	"PYPI_TOKEN",
	"TWINE_PASSWORD",
	// Databases' own password variables, which their clients read.
	"PGPASSWORD",
	"MYSQL_PWD",
	"DOCKER_AUTH_CONFIG",
	// Name shapes that almost always carry a secret, bare or with a
	// prefix.
	"API_KEY",
	"APIKEY",
	"SECRET",
	"SECRET_KEY",
	"TOKEN",
	"PASSWORD",
	"PRIVATE_KEY",
	"*_API_KEY",
	"*_APIKEY",
	"*_SECRET",
	"*_SECRET_KEY",
	"*_TOKEN",
	"*_PASSWORD",
	"*_PASSWD",
	"*_PASS",
	"*_PWD",
	"*_PASSPHRASE",
	"*_PRIVATE_KEY",
	"*_JWT",
}

// AlwaysStrip returns a fresh copy of the built-in always-strip patterns,
// which every build applies whatever its Policy says.
func AlwaysStrip() []string { return append([]string(nil), alwaysStrip[:]...) }

// DefaultBlock returns a fresh copy of the default Block patterns.
func DefaultBlock() []string { return append([]string(nil), defaultBlock[:]...) }

// ForcePrefix marks an overlay key that hands a variable to the child on
// purpose: RUNBOX_FORCE_NAME=value gives the child NAME=value even when NAME
// is blocked. The key itself never reaches a child.
const ForcePrefix = "RUNBOX_FORCE_"

// class is what a policy says about one name.
type class uint8

const (
	plain   class = iota // no rule names it
	blocked              // on the block list; Passthrough may let it through
	always               // on the always-strip list
	control              // a RUNBOX_FORCE_ key, in any case
)

// secret reports whether values of this class count as secrets for
// [Result.CheckArgv].
func (c class) secret() bool { return c == blocked || c == always }

// rules is a Policy checked and prepared for matching.
type rules struct {
	strip, block []string // upper-cased
	pass         []string // as given
}

func compile(p Policy) (*rules, error) {
	block := p.Block
	if len(block) == 0 {
		block = defaultBlock[:]
	}
	r := &rules{}
	for _, l := range []struct {
		field string
		in    [][]string
		out   *[]string
		fold  bool
	}{
		{"ExtraStrip", [][]string{alwaysStrip[:], p.ExtraStrip}, &r.strip, true},
		{"Block", [][]string{block, p.ExtraBlock}, &r.block, true},
		{"Passthrough", [][]string{p.Passthrough}, &r.pass, false},
	} {
		for _, list := range l.in {
			for _, pat := range list {
				if !validName(pat) {
					return nil, fmt.Errorf("spawn: policy %s: invalid pattern %q", l.field, pat)
				}
				if l.fold {
					pat = upper(pat)
				}
				*l.out = append(*l.out, pat)
			}
		}
	}
	return r, nil
}

// validName reports whether s can be a variable name (or a pattern for one):
// non-empty, without '=' or NUL.
func validName(s string) bool { return s != "" && !strings.ContainsAny(s, "=\x00") }

func (r *rules) classify(name string) class {
	u := upper(name)
	switch {
	case strings.HasPrefix(u, ForcePrefix):
		return control
	case matchAny(r.strip, u):
		return always
	case matchAny(r.block, u):
		return blocked
	}
	return plain
}

func (r *rules) passes(name string) bool { return matchAny(r.pass, name) }

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if match(p, name) {
			return true
		}
	}
	return false
}

// match reports whether name matches pattern, in which '*' matches any run of
// bytes. It runs in O(len(pattern)*len(name)) time at worst: on a mismatch it
// backtracks only to the last '*', which is enough for '*'-only globs.
func match(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// upper folds ASCII letters only, so that a name's bytes are never rewritten
// (strings.ToUpper would turn invalid UTF-8 into U+FFFD).
func upper(s string) string {
	for i := 0; i < len(s); i++ {
		if 'a' <= s[i] && s[i] <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'a' <= b[j] && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
