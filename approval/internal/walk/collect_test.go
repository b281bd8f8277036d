package walk

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// collectSeeds are scripts that do and do not hold what collect records,
// spelled every way the parser takes.
var collectSeeds = []string{
	"ls -la", "git status", "go test ./...", "echo hi | wc -l",
	"x=1 y", "export A=b", "declare -A m=([k]=v)", "a+=(x)", "local v=$(pwd)",
	"for f in *.go; do gofmt -l $f; done", "select x in a b; do :; done",
	"cd /tmp && rm -rf x", "pushd ..; make", "c\\d /x", "'cd' /x", "\"f\"or x in y; do :; done",
	"bash -c 'd=/; cd $d'", "f() { cd /; }; f", "echo $((x=1))", "let x=1",
	"c\\\nd /tmp", "f\\\nor x in y; do :; done", "x\\\n=1 y", "pu\\\nshd /", "c\\\r\nd /tmp", "x\\\r\n=1 y",
}

// FuzzMayCollect: the parser is the oracle. A script from which
// collectNode records anything passes mayCollect, so that skipping the
// walk for the others changes nothing.
func FuzzMayCollect(f *testing.F) {
	for _, s := range collectSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
		if err != nil {
			return
		}
		g := newGuard(&Protector{}, "/w")
		syntax.Walk(file, g.collectNode)
		if (len(g.vars) > 0 || len(g.overflow) > 0 || len(g.cdWords) > 0) && !mayCollect(src) {
			t.Errorf("%q: collect records %d variables and %d directory changes, but mayCollect says it holds none", src, len(g.vars), len(g.cdWords))
		}
	})
}

// TestMayCollect: the scripts of collectSeeds that hold an assignment, a
// loop or a directory change pass; plain commands do not.
func TestMayCollect(t *testing.T) {
	for _, src := range []string{"ls -la", "git status", "go test ./...", "echo hi | wc -l"} {
		if mayCollect(src) {
			t.Errorf("mayCollect(%q) = true; want the second walk skipped", src)
		}
	}
	for _, src := range collectSeeds[4:] {
		if src == "c\\d /x" || strings.HasPrefix(src, "\"f\"or") {
			continue // no literal keyword or cd: collectNode records nothing
		}
		if !mayCollect(src) {
			t.Errorf("mayCollect(%q) = false", src)
		}
	}
}
