package approval

import "testing"

// remoteFiles hold destructive and ordinary lines of the families whose
// harm reaches past the machine (publishing, remote deletion, installs
// from arbitrary sources, secrets flowing out, daemon APIs, ownership and
// truncation, repositories redirected and caches poisoned), written apart
// from the rules' own examples in the format of testdata/redteam.txt; the
// second set was written later, apart from the first.
var remoteFiles = []string{"testdata/remote.txt", "testdata/remote-second.txt", "testdata/remote-third.txt", "testdata/remote-fourth.txt", "testdata/remote-fifth.txt", "testdata/remote-sixth.txt", "testdata/remote-seventh.txt", "testdata/remote-eighth.txt", "testdata/remote-ninth.txt", "testdata/remote-tenth.txt", "testdata/remote-eleventh.txt", "testdata/remote-twelfth.txt", "testdata/remote-thirteenth.txt"}

// TestRemote_DestructiveLinesAsk: every destructive line of remote.txt
// asks or is refused, with no sandbox to fall back on, run in a project
// directory as runbox check --jsonl runs it. A family whose
// knowledge loses a program or a verb fails here with the line.
func TestRemote_DestructiveLinesAsk(t *testing.T) {
	for _, file := range remoteFiles {
		t.Run(file, func(t *testing.T) { destructiveLinesAsk(t, file) })
	}
}

func destructiveLinesAsk(t *testing.T, file string) {
	rt, err := loadRedTeam(file)
	if err != nil {
		t.Fatal(err)
	}
	g := newDamageGate(t)
	for _, family := range rt.families {
		caught := 0
		for _, cmd := range rt.destructive[family] {
			if v := g.Check(t.Context(), Request{Command: cmd, Backend: "local", Dir: "/home/user/project"}); v.Decision == Allow {
				t.Errorf("%s: Check(%q) = allow; want ask or deny", family, cmd)
			} else {
				caught++
			}
		}
		t.Logf("%s: %d/%d ask or are refused", family, caught, len(rt.destructive[family]))
	}
}

// TestRemote_OrdinaryLinesAllowed: every ordinary neighbour of those
// families (npm pack, gh repo view, aws s3 ls, env | grep PATH, removing
// build artefacts) is allowed; a rule that reaches too far fails here
// with the rules that matched.
func TestRemote_OrdinaryLinesAllowed(t *testing.T) {
	for _, file := range remoteFiles {
		t.Run(file, func(t *testing.T) { ordinaryLinesAllowed(t, file) })
	}
}

func ordinaryLinesAllowed(t *testing.T, file string) {
	rt, err := loadRedTeam(file)
	if err != nil {
		t.Fatal(err)
	}
	g := newDamageGate(t)
	for _, cmd := range rt.safe {
		if v := g.Check(t.Context(), Request{Command: cmd, Backend: "local", Dir: "/home/user/project"}); v.Decision != Allow {
			t.Errorf("Check(%q) = %s %v; want allow", cmd, v.Decision, v.Reasons)
		}
	}
	for _, cmd := range rt.ask {
		if v := g.Check(t.Context(), Request{Command: cmd, Backend: "local", Dir: "/home/user/project"}); v.Decision == Allow {
			t.Errorf("Check(%q) = allow; want ask or deny (by design)", cmd)
		}
	}
}
