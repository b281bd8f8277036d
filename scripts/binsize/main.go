// Command binsize says how big the runbox binary is and which
// dependencies make it so.
//
//	go run ./scripts/binsize [-pkg ./cmd/runbox] [-modules N] [-keep DIR]
//	go run ./scripts/binsize [-pkg ./cmd/runbox] -plain FILE -stripped FILE
//
// It builds the package twice, as the quick start and scripts/install do:
// plain (CGO_ENABLED=0 go build) and stripped (-trimpath -ldflags='-s -w'),
// and prints both file sizes and the plain build's sections by kind. Then
// it reads the plain build's ELF symbol table, gives each symbol to the
// package that defines it (the longest import path of `go list -deps` the
// name starts with), and sums the sizes by module group (runbox,
// Kubernetes, docker, Modal, Daytona, gRPC, protobuf, OpenTelemetry, AWS,
// golang.org/x, the MCP SDK, the Go standard library, other modules),
// then by module.
//
// What it counts: the functions and variables that take room in the file,
// not those in bss sections, which take none however large
// (crypto/internal/fips140/drbg.memory, 32 MiB, is one; go tool nm lists
// it as data). That is nearly all code: the symbol table gives type
// descriptors and string data no symbols of their own, so the read-only
// data is counted only as a whole ("other"). The rest of the loaded file
// is mostly the function table (.gopclntab), which the runtime needs for
// stacks and tracebacks, is kept by -s -w, and grows with the code, as
// do the type descriptors; so a group's share of the symbols is roughly
// its share of the stripped file too, the last column (an estimate, not
// a measurement). Generic instantiations go to the package of the
// generic function; a name no package owns is "unattributed".
//
// It needs go on PATH and writes nothing in the tree; the two binaries go
// to a temporary directory, or to -keep. With -plain and -stripped it
// builds nothing and reads those two builds of -pkg instead.
package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

func main() {
	pkg := flag.String("pkg", "./cmd/runbox", "the main package to build")
	nmods := flag.Int("modules", 15, "how many of the largest modules to list")
	keep := flag.String("keep", "", "directory to leave the two binaries in (default: a temporary one, removed)")
	plain := flag.String("plain", "", "a plain build of -pkg to read instead of building one (needs -stripped)")
	strip := flag.String("stripped", "", "a stripped build of -pkg to read instead of building one (needs -plain)")
	flag.Parse()
	if (*plain == "") != (*strip == "") {
		fmt.Fprintln(os.Stderr, "binsize: -plain and -stripped go together")
		os.Exit(2)
	}
	if err := run(os.Stdout, *pkg, *nmods, *keep, *plain, *strip); err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, pkg string, nmods int, keep, plain, strip string) error {
	if plain == "" {
		dir := keep
		if dir == "" {
			d, err := os.MkdirTemp("", "binsize")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			dir = d
		}
		plain = filepath.Join(dir, "plain")
		strip = filepath.Join(dir, "stripped")
		if err := goCmd(nil, "build", "-o", plain, pkg); err != nil {
			return err
		}
		if err := goCmd(nil, "build", "-trimpath", "-ldflags=-s -w", "-o", strip, pkg); err != nil {
			return err
		}
	}
	var deps bytes.Buffer
	if err := goCmd(&deps, "list", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", pkg); err != nil {
		return err
	}
	pkgs, err := parseDeps(&deps)
	if err != nil {
		return err
	}
	syms, secs, err := readELF(plain)
	if err != nil {
		return err
	}
	sizes := attribute(syms, pkgs)
	ps, err := os.Stat(plain)
	if err != nil {
		return err
	}
	ss, err := os.Stat(strip)
	if err != nil {
		return err
	}
	report(w, pkg, ps.Size(), ss.Size(), secs, sizes, nmods)
	return nil
}

// goCmd runs the go tool with CGO_ENABLED=0, its standard output to out
// (discarded when nil); the error carries its standard error.
func goCmd(out io.Writer, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout = out
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(errb.Bytes()))
	}
	return nil
}

// std is the module name given to packages of the standard library, which
// belong to none.
const std = "std"

// parseDeps reads `go list -deps -f '{{.ImportPath}} {{.Module.Path}}'`
// lines into a map from import path to module path.
func parseDeps(r io.Reader) (map[string]string, error) {
	pkgs := make(map[string]string)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch len(f) {
		case 0:
		case 1:
			pkgs[f[0]] = std
		default:
			pkgs[f[0]] = f[1]
		}
	}
	return pkgs, sc.Err()
}

// unattributed is the module name for symbols no package owns.
const unattributed = "unattributed"

// symbol is one ELF symbol that takes room in the file.
type symbol struct {
	name string
	size int64
}

// section kinds, for the summary of the file.
const (
	kindCode   = "code and data in symbols"
	kindPCLN   = "function table (.gopclntab)"
	kindDebug  = "DWARF (.debug_*, removed by -w)"
	kindSymtab = "symbol table (.symtab, .strtab, removed by -s)"
	kindOther  = "other (type descriptors, strings: data without a symbol)"
)

// readELF returns the symbols of the ELF file at path that lie in
// sections with room in the file (functions and objects, not bss), and
// the file's bytes by section kind.
func readELF(path string) ([]symbol, map[string]int64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	all, err := f.Symbols()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var syms []symbol
	var inSyms int64
	for _, s := range all {
		if s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) || s.Size == 0 {
			continue
		}
		sec := f.Sections[s.Section]
		if sec.Type == elf.SHT_NOBITS || sec.Flags&elf.SHF_ALLOC == 0 || sec.Name == ".gopclntab" {
			// No room in the file, or counted as the function table.
			continue
		}
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC, elf.STT_OBJECT:
		default:
			continue
		}
		syms = append(syms, symbol{s.Name, int64(s.Size)})
		inSyms += int64(s.Size)
	}
	secs := map[string]int64{kindCode: inSyms}
	var known int64
	for _, sec := range f.Sections {
		if sec.Type == elf.SHT_NOBITS {
			continue
		}
		var k string
		switch {
		case sec.Name == ".gopclntab":
			k = kindPCLN
		case strings.HasPrefix(sec.Name, ".debug_"), strings.HasPrefix(sec.Name, ".zdebug_"):
			k = kindDebug
		case sec.Name == ".symtab" || sec.Name == ".strtab":
			k = kindSymtab
		default:
			continue
		}
		secs[k] += int64(sec.FileSize)
		known += int64(sec.FileSize)
	}
	secs[kindOther] = st.Size() - inSyms - known
	return syms, secs, nil
}

// attribute sums the symbols' sizes by module: pkgs maps each import
// path to its module.
func attribute(syms []symbol, pkgs map[string]string) map[string]int64 {
	sizes := make(map[string]int64)
	for _, s := range syms {
		mod := unattributed
		if p := pkgOf(s.name, pkgs); p != "" {
			mod = pkgs[p]
		}
		sizes[mod] += s.size
	}
	return sizes
}

// pkgOf returns the import path, among pkgs, that defines the symbol
// name, or "" when none does. The path is the longest one the name
// starts with, followed by a dot: "gopkg.in/yaml.v3.(*parser).parse" is
// gopkg.in/yaml.v3's. A type descriptor or itab is its first named
// type's: "type:*[]k8s.io/api/core/v1.Pod" and
// "go:itab.*k8s.io/api/core/v1.Pod,k8s.io/apimachinery/pkg/runtime.Object"
// are k8s.io/api/core/v1's.
func pkgOf(name string, pkgs map[string]string) string {
	for _, p := range []string{"go:itab.", "type:.eq.", "type:.hash.", "type:.namedata.", "type:"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			name = rest
			break
		}
	}
	name = strings.TrimLeft(name, "*[]0123456789")
	if rest, ok := strings.CutPrefix(name, "map["); ok {
		// A map's value type: the key is usually a builtin.
		if _, v, ok := strings.Cut(rest, "]"); ok {
			name = strings.TrimLeft(v, "*[]0123456789")
		}
	}
	if i := strings.IndexAny(name, "[(, "); i >= 0 {
		// A generic's type arguments, a method's receiver or a composite
		// type's other parts: the path ends before them.
		name = name[:i]
	}
	best := ""
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			if _, ok := pkgs[name[:i]]; ok {
				best = name[:i]
			}
		}
	}
	return best
}

// groups puts modules together under the names people know them by; the
// first prefix that matches wins. A module that matches none is its own
// group in the module table and "other modules" in the group table.
var groups = []struct{ name, prefix string }{
	{"runbox", "github.com/runbox/runbox"},
	{"Kubernetes (k8s.io, sigs.k8s.io)", "k8s.io/"},
	{"Kubernetes (k8s.io, sigs.k8s.io)", "sigs.k8s.io/"},
	{"docker (github.com/docker, moby)", "github.com/docker/"},
	{"docker (github.com/docker, moby)", "github.com/moby/"},
	{"Modal (modal-go)", "github.com/modal-labs/"},
	{"Daytona (sdk-go, API clients)", "github.com/daytonaio/"},
	{"gRPC", "google.golang.org/grpc"},
	{"gRPC", "google.golang.org/genproto"},
	{"gRPC", "github.com/grpc-ecosystem/"},
	{"protobuf", "google.golang.org/protobuf"},
	{"OpenTelemetry", "go.opentelemetry.io/"},
	{"AWS SDK", "github.com/aws/"},
	{"golang.org/x", "golang.org/x/"},
	{"MCP SDK", "github.com/modelcontextprotocol/"},
	{"Go standard library", std},
	{"unattributed", unattributed},
}

func groupOf(mod string) string {
	for _, g := range groups {
		exact := g.prefix == std || g.prefix == unattributed
		if mod == g.prefix || !exact && strings.HasPrefix(mod, g.prefix) {
			return g.name
		}
	}
	return "other modules"
}

type row struct {
	name string
	n    int64
}

func sorted(m map[string]int64) []row {
	rows := make([]row, 0, len(m))
	for k, v := range m {
		rows = append(rows, row{k, v})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		return rows[i].name < rows[j].name
	})
	return rows
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func report(w io.Writer, pkg string, plain, strip int64, secs, mods map[string]int64, nmods int) {
	var total int64
	byGroup := make(map[string]int64)
	for m, n := range mods {
		total += n
		byGroup[groupOf(m)] += n
	}
	fmt.Fprintf(w, "%s, CGO_ENABLED=0\n", pkg)
	fmt.Fprintf(w, "  plain     %s (%d bytes)\n", mb(plain), plain)
	fmt.Fprintf(w, "  stripped  %s (%d bytes; -trimpath -ldflags='-s -w')\n", mb(strip), strip)
	fmt.Fprintf(w, "\nthe plain build\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, k := range []string{kindCode, kindPCLN, kindDebug, kindSymtab, kindOther} {
		fmt.Fprintf(tw, "%s\t%s\t\n", k, mb(secs[k]))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncode and data by group\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\tsymbols\tshare\t≈ in stripped\t")
	for _, r := range sorted(byGroup) {
		share := float64(r.n) / float64(total)
		fmt.Fprintf(tw, "%s\t%s\t%.1f%%\t%s\t\n", r.name, mb(r.n), 100*share, mb(int64(share*float64(strip))))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nlargest modules\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, r := range sorted(mods) {
		if i == nmods {
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f%%\t\n", r.name, mb(r.n), 100*float64(r.n)/float64(total))
	}
	tw.Flush()
}
