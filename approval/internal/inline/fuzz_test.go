package inline

import "testing"

// tails are code that names a forbidden operation, one per language.
// Appended after a newline to any source, each must leave it not quiet:
// either the tokenizer reads the tail as code and the judge sees it, or
// the source left something open and the whole cannot be read.
var tails = map[Lang]string{
	Python:     "\nimport os\nos.system('x')\n",
	JavaScript: "\nrequire('child_process').execSync('x')\n",
}

func FuzzQuiet(f *testing.F) {
	for _, c := range append(append([]qcase{}, quietCases...), loudCases...) {
		f.Add(uint8(c.lang), c.src)
	}
	f.Fuzz(func(t *testing.T, l uint8, src string) {
		lang := Lang(l%2 + 1)
		ok, why := Quiet(lang, src)
		if ok != (why == "") {
			t.Fatalf("ok=%v why=%q", ok, why)
		}
		if ok2, why2 := Quiet(lang, src); ok2 != ok || why2 != why {
			t.Fatalf("not deterministic: %v %q then %v %q", ok, why, ok2, why2)
		}
		if ok, why := Quiet(lang, src+tails[lang]); ok {
			t.Fatalf("quiet with a forbidden tail (%q)", why)
		}
	})
}
