package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var testPkgs = map[string]string{
	"runtime":                          std,
	"sync/atomic":                      std,
	"gopkg.in/yaml.v3":                 "gopkg.in/yaml.v3",
	"k8s.io/api/core/v1":               "k8s.io/api",
	"k8s.io/apimachinery/pkg/runtime":  "k8s.io/apimachinery",
	"go.opentelemetry.io/otel":         "go.opentelemetry.io/otel",
	"go.opentelemetry.io/otel/trace":   "go.opentelemetry.io/otel/trace",
	"github.com/runbox/runbox/service": "github.com/runbox/runbox",
}

// TestPkgOf: a symbol goes to the package that defines it, the longest
// import path followed by a dot, through the decorations of type
// descriptors, itabs, generics and methods; a wrong answer moves bytes
// from one module's row to another's.
func TestPkgOf(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"runtime.mallocgc", "runtime"},
		{"gopkg.in/yaml.v3.(*parser).parse", "gopkg.in/yaml.v3"},
		{"k8s.io/api/core/v1.(*Pod).Marshal", "k8s.io/api/core/v1"},
		{"k8s.io/api/core/v1..stmp_12", "k8s.io/api/core/v1"},
		{"type:*[]k8s.io/api/core/v1.Pod", "k8s.io/api/core/v1"},
		{"type:map[string]*k8s.io/api/core/v1.Pod", "k8s.io/api/core/v1"},
		{"type:.eq.k8s.io/api/core/v1.PodSpec", "k8s.io/api/core/v1"},
		{"go:itab.*k8s.io/api/core/v1.Pod,k8s.io/apimachinery/pkg/runtime.Object", "k8s.io/api/core/v1"},
		{"go.opentelemetry.io/otel/trace.Tracer.Start", "go.opentelemetry.io/otel/trace"},
		{"go.opentelemetry.io/otel.GetTracerProvider", "go.opentelemetry.io/otel"},
		{"sync/atomic.(*Pointer[go.shape.struct {}]).Load", "sync/atomic"},
		{"github.com/runbox/runbox/service.New.func1", "github.com/runbox/runbox/service"},
		{"go:string.*", ""},
		{"type:struct { F uintptr }", ""},
		{"github.com/unknown/pkg.F", ""},
	} {
		if got := pkgOf(tc.name, testPkgs); got != tc.want {
			t.Errorf("pkgOf(%q) = %q; want %q", tc.name, got, tc.want)
		}
	}
}

// TestAttribute: sizes are summed by module, and names no package owns
// are unattributed.
func TestAttribute(t *testing.T) {
	got := attribute([]symbol{
		{"runtime.mallocgc", 1000},
		{"k8s.io/api/core/v1.(*Pod).Marshal", 500},
		{"type:*k8s.io/api/core/v1.Pod", 200}, // an older symbol table's type descriptor
		{"k8s.io/apimachinery/pkg/runtime.x", 30},
		{"go:string.*", 70},
	}, testPkgs)
	want := map[string]int64{std: 1000, "k8s.io/api": 700, "k8s.io/apimachinery": 30, unattributed: 70}
	if len(got) != len(want) {
		t.Errorf("attribute = %v; want %v", got, want)
	}
	for m, n := range want {
		if got[m] != n {
			t.Errorf("attribute[%q] = %d; want %d", m, got[m], n)
		}
	}
}

// TestReadELF_NoBSS builds a small program: its code is counted, and a
// variable in bss is not, as it takes no room in the file (go tool nm
// calls such symbols data, which once counted 32 MiB that were not there).
// The kinds add up to the file. (go test strips its own binary, so the
// test cannot read itself.)
func TestReadELF_NoBSS(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	dir := t.TempDir()
	src := "package main\n\nvar big [1 << 22]byte\n\nfunc main() { big[len(big)-1] = 1; println(len(big)) }\n"
	for name, text := range map[string]string{"go.mod": "module hello\n", "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", exe, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, b)
	}
	syms, secs, err := readELF(exe)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]int64{}
	for _, s := range syms {
		have[s.name] = s.size
	}
	if have["main.main"] == 0 {
		t.Error("main.main is not among the symbols")
	}
	if n, ok := have["main.big"]; ok {
		t.Errorf("main.big (bss) is counted, %d bytes", n)
	}
	st, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for k, n := range secs {
		if n < 0 {
			t.Errorf("section kind %q = %d bytes", k, n)
		}
		sum += n
	}
	if sum != st.Size() {
		t.Errorf("section kinds sum to %d; the file is %d", sum, st.Size())
	}
}

// TestGroupOf: modules fall in the group of the first matching prefix;
// the standard library and unattributed match only exactly.
func TestGroupOf(t *testing.T) {
	for _, tc := range []struct{ mod, want string }{
		{"github.com/runbox/runbox", "runbox"},
		{"k8s.io/client-go", "Kubernetes (k8s.io, sigs.k8s.io)"},
		{"sigs.k8s.io/yaml", "Kubernetes (k8s.io, sigs.k8s.io)"},
		{"google.golang.org/grpc", "gRPC"},
		{"google.golang.org/genproto/googleapis/rpc", "gRPC"},
		{"github.com/aws/aws-sdk-go-v2/service/s3", "AWS SDK"},
		{std, "Go standard library"},
		{"stdfoo.example/x", "other modules"},
		{"github.com/spf13/cobra", "other modules"},
	} {
		if got := groupOf(tc.mod); got != tc.want {
			t.Errorf("groupOf(%q) = %q; want %q", tc.mod, got, tc.want)
		}
	}
}
