package agent

import (
	"encoding/json"
	"fmt"

	"github.com/runbox/runbox/envs"
)

// A JSON message (call, reply, exit) that does not fit in one frame is
// split: every piece but the last goes in a frameMore of the message's
// channel, the last in a frame of the message's own type. The pieces of
// one message are queued together, so nothing of the same channel comes
// between them; other channels' frames may. Before version 2 a reply over
// MaxPayload was dropped and the caller waited for it forever.

// jsonFrames encodes v as the frames of one message of type typ.
func jsonFrames(typ frameType, id uint32, v any) ([]frame, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("agent: encode %v: %w", typ, err)
	}
	if len(b) > MaxMessage {
		return nil, fmt.Errorf("agent: %v message of %d bytes exceeds the %d-byte message limit: %w", typ, len(b), MaxMessage, envs.ErrUnsupported)
	}
	return splitMessage(typ, id, b), nil
}

// splitMessage cuts b into frames of at most MaxPayload bytes.
func splitMessage(typ frameType, id uint32, b []byte) []frame {
	fs := make([]frame, 0, len(b)/MaxPayload+1)
	for len(b) > MaxPayload {
		fs = append(fs, frame{typ: frameMore, id: id, payload: b[:MaxPayload]})
		b = b[MaxPayload:]
	}
	return append(fs, frame{typ: typ, id: id, payload: b})
}

// isMessage reports whether frames of type t carry a JSON message that
// may have been split.
func isMessage(t frameType) bool {
	return t == frameCall || t == frameReply || t == frameExit
}

// assembler joins split messages on the receiving side. It belongs to the
// reader loop and is used by it alone.
type assembler struct {
	parts map[uint32][]byte
	total int // bytes held in parts, over every channel
}

// add takes the next frame read. It returns the frame to dispatch — a
// whole message, or any other frame unchanged — and false while a message
// is still incomplete.
func (a *assembler) add(f frame) (frame, bool, error) {
	switch {
	case f.typ == frameMore:
		if a.total+len(f.payload) > MaxMessage {
			return frame{}, false, &ProtocolError{Msg: fmt.Sprintf("unfinished messages exceed %d bytes", MaxMessage)}
		}
		if a.parts == nil {
			a.parts = map[uint32][]byte{}
		}
		a.parts[f.id] = append(a.parts[f.id], f.payload...)
		a.total += len(f.payload)
		return frame{}, false, nil
	case isMessage(f.typ):
		head, ok := a.parts[f.id]
		if !ok {
			return f, true, nil
		}
		delete(a.parts, f.id)
		a.total -= len(head)
		if len(head)+len(f.payload) > MaxMessage {
			return frame{}, false, &ProtocolError{Msg: fmt.Sprintf("%v message exceeds %d bytes", f.typ, MaxMessage)}
		}
		f.payload = append(head, f.payload...)
		return f, true, nil
	}
	return f, true, nil
}
