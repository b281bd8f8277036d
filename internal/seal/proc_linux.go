package seal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// erase blanks, in this process's own memory, the environment entries of
// names and every occurrence of values in the arguments: the bytes the
// kernel shows as /proc/self/environ and /proc/self/cmdline. The Go
// strings that pointed at them were copied by Process first.
func erase(names, values []string) error {
	if len(names) == 0 && len(values) == 0 {
		return nil
	}
	argStart, argEnd, envStart, envEnd, err := regions()
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	if len(names) > 0 {
		if err := rewrite(mem, envStart, envEnd, func(b []byte) { blankEntries(b, names) }); err != nil {
			return fmt.Errorf("environ: %w", err)
		}
	}
	if len(values) > 0 {
		if err := rewrite(mem, argStart, argEnd, func(b []byte) { blankValues(b, values) }); err != nil {
			return fmt.Errorf("cmdline: %w", err)
		}
	}
	return nil
}

// hideArgs blanks the values of forms in the argument region (see
// HideEnvArgs).
func hideArgs(forms []envArg) error {
	argStart, argEnd, _, _, err := regions()
	if err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	defer mem.Close()
	if err := rewrite(mem, argStart, argEnd, func(b []byte) { blankArgs(b, forms) }); err != nil {
		return fmt.Errorf("seal: cmdline: %w", err)
	}
	return nil
}

// rewrite reads [start, end) of mem, lets edit change it, and writes it
// back if it changed.
func rewrite(mem *os.File, start, end uint64, edit func([]byte)) error {
	if end <= start || end-start > 16<<20 {
		return fmt.Errorf("implausible region %#x-%#x", start, end)
	}
	b := make([]byte, end-start)
	if _, err := mem.ReadAt(b, int64(start)); err != nil {
		return err
	}
	orig := bytes.Clone(b)
	edit(b)
	if bytes.Equal(orig, b) {
		return nil
	}
	_, err := mem.WriteAt(b, int64(start))
	return err
}

// blankEntries zeroes each NUL-terminated NAME=VALUE entry whose name is
// in names, the name included.
func blankEntries(b []byte, names []string) {
	for off := 0; off < len(b); {
		n := bytes.IndexByte(b[off:], 0)
		if n < 0 {
			n = len(b) - off
		}
		entry := b[off : off+n]
		if k, _, ok := bytes.Cut(entry, []byte("=")); ok {
			for _, name := range names {
				if string(k) == name {
					clear(entry)
					break
				}
			}
		}
		off += n + 1
	}
}

// blankValues overwrites every occurrence of each value with '*'.
func blankValues(b []byte, values []string) {
	for _, v := range values {
		for {
			i := bytes.Index(b, []byte(v))
			if i < 0 {
				break
			}
			for j := i; j < i+len(v); j++ {
				b[j] = '*'
			}
		}
	}
}

// regions reads arg_start, arg_end, env_start and env_end (fields 48–51 of
// /proc/self/stat, Linux 3.5 and later).
func regions() (argStart, argEnd, envStart, envEnd uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	// comm (field 2) may hold spaces; fields after its ')' start at 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, 0, errors.New("unreadable /proc/self/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 49 {
		return 0, 0, 0, 0, errors.New("/proc/self/stat lacks the memory layout fields")
	}
	var v [4]uint64
	for j := range v {
		if v[j], err = strconv.ParseUint(f[45+j], 10, 64); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("/proc/self/stat field %d: %w", 48+j, err)
		}
	}
	return v[0], v[1], v[2], v[3], nil
}

func nonDumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// sealedFile makes a memfd holding data, positioned at its start.
func sealedFile(data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("runbox-sealed", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "runbox-sealed")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
