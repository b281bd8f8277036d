package agent

import (
	"bytes"
	"errors"
	"testing"

	"github.com/runbox/runbox/envs"
)

// TestSplitMessage_RoundTrip protects messages larger than a frame: they
// are cut into frames no larger than MaxPayload and joined back to the
// same bytes, with another channel's frames in between.
func TestSplitMessage_RoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		size   int
		frames int
	}{
		{"empty", 0, 1},
		{"small", 100, 1},
		{"exactly-one-frame", MaxPayload, 1},
		{"one-byte-over", MaxPayload + 1, 2},
		{"several", 3*MaxPayload + 5, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := make([]byte, c.size)
			for i := range msg {
				msg[i] = byte(i * 13)
			}
			fs := splitMessage(frameReply, 7, msg)
			if len(fs) != c.frames {
				t.Fatalf("splitMessage(%d bytes) = %d frames; want %d", c.size, len(fs), c.frames)
			}
			var wire []byte
			for i, f := range fs {
				wire = encodeFrame(wire, f)
				// Another channel's data frame between the pieces.
				if i == 0 {
					wire = encodeFrame(wire, dataFrame(9, streamOut, 0, []byte("x")))
				}
			}
			r := bytes.NewReader(wire)
			var a assembler
			var got []frame
			for r.Len() > 0 {
				f, err := readFrame(r)
				if err != nil {
					t.Fatalf("readFrame: %v", err)
				}
				whole, ok, err := a.add(f)
				if err != nil {
					t.Fatalf("assembler: %v", err)
				}
				if ok {
					got = append(got, whole)
				}
			}
			if len(got) != 2 {
				t.Fatalf("dispatched %d frames; want the data frame and the message", len(got))
			}
			m := got[0]
			if m.typ == frameData {
				m = got[1]
			}
			if m.typ != frameReply || m.id != 7 || !bytes.Equal(m.payload, msg) {
				t.Fatalf("joined message = %v/%d/%d bytes; want reply/7/%d bytes", m.typ, m.id, len(m.payload), len(msg))
			}
			if a.total != 0 || len(a.parts) != 0 {
				t.Errorf("assembler still holds %d bytes after the message ended", a.total)
			}
		})
	}
}

// TestAssembler_BoundsUnfinished protects the receiver's memory: pieces of
// unfinished messages, on any number of channels, may not add up to more
// than MaxMessage.
func TestAssembler_BoundsUnfinished(t *testing.T) {
	var a assembler
	piece := make([]byte, MaxPayload)
	var err error
	for id := uint32(1); err == nil && id < 1000; id++ {
		_, _, err = a.add(frame{typ: frameMore, id: id, payload: piece})
	}
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("unfinished pieces without end = %v; want *ProtocolError", err)
	}
	if a.total > MaxMessage {
		t.Errorf("assembler holds %d bytes; bound is %d", a.total, MaxMessage)
	}
}

// TestJSONFrames_RefusesOverMessageLimit: a message over MaxMessage is
// refused by the sender with ErrUnsupported rather than sent.
func TestJSONFrames_RefusesOverMessageLimit(t *testing.T) {
	big := make([]byte, MaxMessage) // base64 makes it larger still
	_, err := jsonFrames(frameReply, 1, reply{Result: &wireResult{Output: big}})
	if !errors.Is(err, envs.ErrUnsupported) {
		t.Fatalf("jsonFrames(%d-byte output) = %v; want ErrUnsupported", len(big), err)
	}
}
