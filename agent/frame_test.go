package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
)

// TestFrame_RoundTrip checks that every frame kind decodes to what was
// encoded, back to back on one stream.
func TestFrame_RoundTrip(t *testing.T) {
	frames := []frame{
		{typ: frameHello, id: 0, payload: []byte(`{"version":1}`)},
		dataFrame(7, streamOut, 1<<40, []byte("a\xff\x00b")),
		windowFrame(9, streamIn, 12345),
		eofFrame(3, streamErr, errors.New("boom")),
		{typ: frameCall, id: 1, payload: []byte{}},
	}
	var buf []byte
	for _, f := range frames {
		buf = encodeFrame(buf, f)
	}
	r := bytes.NewReader(buf)
	for i, want := range frames {
		got, err := readFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.typ != want.typ || got.id != want.id || !bytes.Equal(got.payload, want.payload) {
			t.Errorf("frame %d = %v/%d/%q; want %v/%d/%q", i, got.typ, got.id, got.payload, want.typ, want.id, want.payload)
		}
	}
	if _, err := readFrame(r); err != io.EOF {
		t.Errorf("after the last frame: %v; want io.EOF", err)
	}
}

// TestFrame_HugeLengthRefused protects the allocation bound: a header that
// declares 4 GiB is refused before anything is allocated.
func TestFrame_HugeLengthRefused(t *testing.T) {
	h := []byte{byte(frameData), 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}
	_, err := readFrame(bytes.NewReader(h))
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("readFrame(4 GiB header) = %v; want *ProtocolError", err)
	}
}

// FuzzFrame feeds arbitrary bytes to the decoder and the message
// assembler behind it: they must never panic, never allocate past
// MaxPayload for one frame or MaxMessage for one message, and every frame
// the decoder accepts must re-encode to the bytes it came from.
func FuzzFrame(f *testing.F) {
	f.Add(encodeFrame(nil, dataFrame(1, streamOut, 0, []byte("hello"))))
	f.Add(encodeFrame(nil, windowFrame(1, streamIn, 10)))
	f.Add(encodeFrame(nil, eofFrame(2, streamErr, nil)))
	f.Add(encodeFrame(nil, frame{typ: frameCall, id: 3, payload: []byte(`{"seq":1,"op":"ping"}`)}))
	f.Add(encodeFrame(encodeFrame(nil, frame{typ: frameMore, id: 4, payload: []byte(`{"seq":`)}), frame{typ: frameReply, id: 4, payload: []byte(`2}`)}))
	f.Add([]byte{byte(frameData), 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		var msgs assembler
		for {
			start := len(b) - r.Len()
			fr, err := readFrame(r)
			if err != nil {
				return
			}
			if whole, ok, err := msgs.add(fr); err == nil && ok && len(whole.payload) > MaxMessage {
				t.Fatalf("assembled a %d-byte message", len(whole.payload))
			}
			if len(fr.payload) > MaxPayload {
				t.Fatalf("accepted a %d-byte payload", len(fr.payload))
			}
			end := len(b) - r.Len()
			if re := encodeFrame(nil, fr); !bytes.Equal(re, b[start:end]) {
				t.Fatalf("re-encoded frame differs")
			}
			if fr.typ == frameData {
				parseData(fr) // must not panic on an accepted frame
			}
			if fr.typ == frameWindow {
				binary.BigEndian.Uint32(fr.payload[1:])
			}
		}
	})
}

// TestNewClient_VersionMismatch protects the versioned handshake: a client
// refuses an agent of another version with a *VersionError naming both.
func TestNewClient_VersionMismatch(t *testing.T) {
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() { // a fake agent from the future
		defer close(done)
		defer b.Close()
		if _, err := readFrame(b); err != nil {
			return
		}
		fs, _ := jsonFrames(frameHello, 0, hello{Version: Version + 1, Role: "agent", Build: "runbox-next"})
		b.Write(encodeFrame(nil, fs[0]))
		io.Copy(io.Discard, b)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := NewClient(ctx, a, ClientOptions{})
	<-done
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Agent != Version+1 || ve.Client != Version {
		t.Fatalf("NewClient against a newer agent = %v; want *VersionError{%d, %d}", err, Version, Version+1)
	}
	if !errors.Is(err, envs.ErrUnsupported) {
		t.Errorf("VersionError does not match envs.ErrUnsupported")
	}
}

// TestNewClient_HandshakeTimeout protects against a peer that never answers
// (a binary that is not an agent): ctx bounds the handshake.
func TestNewClient_HandshakeTimeout(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	go io.Copy(io.Discard, b)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := NewClient(ctx, a, ClientOptions{}); err == nil {
		t.Fatal("NewClient against a silent peer succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("handshake timeout took %v", d)
	}
}
