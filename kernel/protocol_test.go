package kernel

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLineReader_Bounded: lines come back whole up to the bound, blank
// lines are skipped, and a longer line is ErrFrameTooLarge however much
// more the writer has, so the reader never holds more than the bound.
func TestLineReader_Bounded(t *testing.T) {
	const max = 100
	for _, tc := range []struct {
		name  string
		input string
		want  []string
		err   error
	}{
		{"lines", "a\nbb\n", []string{"a", "bb"}, io.EOF},
		{"blank lines skipped", "\n\na\n\r\n", []string{"a"}, io.EOF},
		{"exactly the bound", strings.Repeat("x", max) + "\nz\n", []string{strings.Repeat("x", max), "z"}, io.EOF},
		{"one over the bound", strings.Repeat("x", max+1) + "\n", nil, ErrFrameTooLarge},
		{"endless line", "ok\n" + strings.Repeat("y", 1<<20), []string{"ok"}, ErrFrameTooLarge},
		{"partial line at EOF dropped", "a\nno-newline", []string{"a"}, io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := newLineReader(strings.NewReader(tc.input), max)
			var got []string
			var err error
			for {
				var line []byte
				if line, err = lr.next(); err != nil {
					break
				}
				got = append(got, string(line))
			}
			if !errors.Is(err, tc.err) || strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines = %q, err = %v; want %q, %v", got, err, tc.want, tc.err)
			}
			if cap(lr.buf) > 4*max {
				t.Errorf("buffer grew to %d for a bound of %d", cap(lr.buf), max)
			}
		})
	}
}

// driverLine seals f as the driver does (its label, its key).
func driverLine(key []byte, label string, f frame) []byte {
	ch := &channel{key: key}
	body, _ := json.Marshal(f)
	return []byte(hex.EncodeToString(ch.mac(label, body)) + " " + string(body))
}

// TestChannel_OpenAcceptsOnlyTheDriversFrames: a frame is accepted only
// with a MAC under this kernel's key and the driver's label, once, in
// order; a host frame reflected back, another kernel's frame, a replay
// and a bare frame are dropped.
func TestChannel_OpenAcceptsOnlyTheDriversFrames(t *testing.T) {
	ch, err := newChannel()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newChannel()
	done := func(seq uint64) frame { return frame{Op: "done", ID: 1, Seq: seq, Status: StatusOK} }
	reflected, _ := ch.seal(done(0)) // sealed with the host's label
	for _, tc := range []struct {
		name string
		line []byte
		ok   bool
	}{
		{"bare JSON", []byte(`{"op":"done","id":1,"seq":5,"status":"ok"}`), false},
		{"host frame reflected", []byte(strings.TrimSpace(string(reflected))), false},
		{"another kernel's key", driverLine(other.key, labelDriver, done(5)), false},
		{"garbage MAC", []byte(strings.Repeat("0", macHexLen) + ` {"op":"done","seq":5}`), false},
		{"the driver's frame", driverLine(ch.key, labelDriver, done(5)), true},
		{"replayed", driverLine(ch.key, labelDriver, done(5)), false},
		{"older sequence", driverLine(ch.key, labelDriver, done(4)), false},
		{"next frame", driverLine(ch.key, labelDriver, done(9)), true},
		{"bad JSON under a valid MAC", []byte(hex.EncodeToString(ch.mac(labelDriver, []byte("{"))) + " {"), false},
	} {
		if _, ok := ch.open(tc.line); ok != tc.ok {
			t.Errorf("%s: open = %v; want %v", tc.name, ok, tc.ok)
		}
	}
}

// FuzzChannelOpen: no input panics open, and none is accepted without
// the key.
func FuzzChannelOpen(f *testing.F) {
	f.Add([]byte(`{"op":"done","id":1,"seq":1}`))
	f.Add([]byte(strings.Repeat("a", macHexLen) + ` {"op":"done","id":1,"seq":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ch := &channel{key: []byte("fuzz-key-0123456789abcdef0123456")}
		if fr, ok := ch.open(line); ok {
			t.Fatalf("accepted %q as %+v without its MAC", line, fr)
		}
	})
}
