package agent

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/runbox/runbox/envs"
)

// Version is the protocol version this package speaks. A client and an
// agent of different versions refuse each other in the handshake
// (see [VersionError]). Version 2 added messages that span frames
// (frameMore).
const Version = 2

// MaxPayload bounds one frame's payload. A frame that declares more is a
// protocol error: the decoder never allocates beyond it.
const MaxPayload = 1 << 20

// MaxMessage bounds one JSON message (a call, a reply, an exit). A message
// longer than [MaxPayload] — a reply whose Result carries megabytes of
// captured output — travels as several frames (see message.go). A sender
// refuses to encode more; a receiver drops a peer whose unfinished
// messages, on all channels together, add up to more, so a hostile peer
// cannot make it hold more than this.
const MaxMessage = 64 << 20

// headerSize is the frame header: type (1), channel id (4), length (4).
const headerSize = 9

// window is the flow-control window of one stream: a sender may have at
// most this many unacknowledged bytes in flight, so a reader that stops
// reading holds at most this much memory on the receiving side and blocks
// only its own stream.
const window = 256 << 10

// chunk is the largest data payload a sender puts in one frame.
const chunk = 32 << 10

// frameType is the kind of a frame.
type frameType uint8

const (
	frameHello  frameType = iota + 1 // JSON hello; channel 0
	frameCall                        // JSON call; channel = the call's subject
	frameReply                       // JSON reply to a call, matched by seq
	frameData                        // stream(1) offset(8) bytes
	frameWindow                      // stream(1) increment(4)
	frameEOF                         // stream(1) [error text]
	frameExit                        // JSON exit of a streaming process
	frameMore                        // a leading piece of a JSON message; the rest follows on the same channel
	frameMax
)

func (t frameType) String() string {
	switch t {
	case frameHello:
		return "hello"
	case frameCall:
		return "call"
	case frameReply:
		return "reply"
	case frameData:
		return "data"
	case frameWindow:
		return "window"
	case frameEOF:
		return "eof"
	case frameExit:
		return "exit"
	case frameMore:
		return "more"
	}
	return fmt.Sprintf("frame(%d)", uint8(t))
}

// Streams of a channel. Stream 0 flows from client to agent (stdin, file
// contents being put); 1 and 2 flow from agent to client (stdout or the
// interleaved output, stderr, file contents being read).
const (
	streamIn     = 0
	streamOut    = 1
	streamErr    = 2
	streamsTotal = 3
)

type frame struct {
	typ     frameType
	id      uint32
	payload []byte
}

// ProtocolError is a malformed frame or a peer breaking the protocol
// (a frame too large, an unknown type, data beyond the granted window).
// The connection is dropped when one is met.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return "agent: protocol error: " + e.Msg }

// VersionError is returned by [NewClient] when the agent speaks another
// protocol version. Client and agent must come from the same runbox release.
type VersionError struct {
	Client, Agent int
	// AgentBuild is the agent's self-description (release, OS/arch), if sent.
	AgentBuild string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("agent: incompatible agent: it speaks protocol version %d (%s), this client speaks %d; deploy the agent from the same runbox release",
		e.Agent, e.AgentBuild, e.Client)
}

// Is makes errors.Is(err, envs.ErrUnsupported) true.
func (e *VersionError) Is(target error) bool { return target == envs.ErrUnsupported }

// encodeFrame appends f's wire form to dst.
func encodeFrame(dst []byte, f frame) []byte {
	var h [headerSize]byte
	h[0] = byte(f.typ)
	binary.BigEndian.PutUint32(h[1:5], f.id)
	binary.BigEndian.PutUint32(h[5:9], uint32(len(f.payload)))
	return append(append(dst, h[:]...), f.payload...)
}

// readFrame reads one frame. The payload is allocated only after its
// declared length has been checked against MaxPayload.
func readFrame(r io.Reader) (frame, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	f := frame{typ: frameType(h[0]), id: binary.BigEndian.Uint32(h[1:5])}
	n := binary.BigEndian.Uint32(h[5:9])
	if f.typ == 0 || f.typ >= frameMax {
		return frame{}, &ProtocolError{Msg: fmt.Sprintf("unknown frame type %d", h[0])}
	}
	if n > MaxPayload {
		return frame{}, &ProtocolError{Msg: fmt.Sprintf("%v frame of %d bytes exceeds the %d-byte limit", f.typ, n, MaxPayload)}
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(r, f.payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	if err := f.check(); err != nil {
		return frame{}, err
	}
	return f, nil
}

// check validates the fixed part of typed payloads.
func (f frame) check() error {
	switch f.typ {
	case frameData:
		if len(f.payload) < 9 || f.payload[0] >= streamsTotal {
			return &ProtocolError{Msg: "bad data frame"}
		}
	case frameWindow:
		if len(f.payload) != 5 || f.payload[0] >= streamsTotal {
			return &ProtocolError{Msg: "bad window frame"}
		}
	case frameEOF:
		if len(f.payload) < 1 || f.payload[0] >= streamsTotal {
			return &ProtocolError{Msg: "bad eof frame"}
		}
	}
	return nil
}

func dataFrame(id uint32, stream byte, off uint64, b []byte) frame {
	p := make([]byte, 9+len(b))
	p[0] = stream
	binary.BigEndian.PutUint64(p[1:9], off)
	copy(p[9:], b)
	return frame{typ: frameData, id: id, payload: p}
}

func parseData(f frame) (stream byte, off uint64, b []byte) {
	return f.payload[0], binary.BigEndian.Uint64(f.payload[1:9]), f.payload[9:]
}

func windowFrame(id uint32, stream byte, n uint32) frame {
	p := make([]byte, 5)
	p[0] = stream
	binary.BigEndian.PutUint32(p[1:], n)
	return frame{typ: frameWindow, id: id, payload: p}
}

func eofFrame(id uint32, stream byte, err error) frame {
	p := []byte{stream}
	if err != nil {
		p = append(p, err.Error()...)
	}
	return frame{typ: frameEOF, id: id, payload: p}
}
