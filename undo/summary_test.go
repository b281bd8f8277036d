package undo

import (
	"fmt"
	"testing"
)

func TestRecord_Summary(t *testing.T) {
	three := []Change{
		{Path: "a.go", Kind: KindModified, Type: TypeFile},
		{Path: "build", Kind: KindDeleted, Type: TypeDir},
		{Path: "new.go", From: "old.go", Kind: KindRenamed, Type: TypeFile},
	}
	tests := []struct {
		name string
		r    *Record
		n    int
		want string
	}{
		{"nil", nil, 4, ""},
		{"no step", &Record{}, 4, ""},
		{"all listed", &Record{Step: 7, Changes: three}, 4,
			"3 path(s) (step 7): modified a.go, deleted build/, renamed old.go -> new.go"},
		{"some counted", &Record{Step: 7, Changes: three}, 1,
			"3 path(s) (step 7): modified a.go, 2 more"},
		{"beyond the list", &Record{Step: 2, Changes: three[:1], More: 198}, 4,
			"199 path(s) (step 2): modified a.go, 198 more"},
	}
	for _, tt := range tests {
		if got := tt.r.Summary(tt.n); got != tt.want {
			t.Errorf("%s: Summary(%d) = %q; want %q", tt.name, tt.n, got, tt.want)
		}
	}
}

func ExampleRecord_Summary() {
	r := &Record{Step: 12, Changes: []Change{
		{Path: "src/main.go", Kind: KindModified, Type: TypeFile},
		{Path: "build", Kind: KindDeleted, Type: TypeDir},
	}, More: 40}
	fmt.Println(r.Summary(2))
	// Output: 42 path(s) (step 12): modified src/main.go, deleted build/, 40 more
}
