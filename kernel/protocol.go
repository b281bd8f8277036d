package kernel

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// frame is one protocol message, in either direction: a JSON object on
// one line. Which fields are set depends on Op.
//
// Host to driver: exec (ID, Code), interrupt (ID), result (Call, OK,
// Value or Error).
// Driver to host: ready (PID, Python), out (ID, Stream, Data as base64),
// call (ID, Call, Tool, Args), done (ID and the cell's outcome).
type frame struct {
	Op string `json:"op"`
	// Seq numbers the frames of one direction from 1; a frame whose Seq
	// is not above the last accepted one is a replay and is dropped.
	Seq  uint64 `json:"seq"`
	ID   int64  `json:"id,omitempty"`
	Code string `json:"code,omitempty"`

	// ready
	PID    int    `json:"pid,omitempty"`
	Python string `json:"python,omitempty"`

	// out
	Stream string `json:"stream,omitempty"`
	Data   []byte `json:"data,omitempty"`

	// call and result
	Call  int64           `json:"call,omitempty"`
	Tool  string          `json:"tool,omitempty"`
	Args  json.RawMessage `json:"args,omitempty"`
	OK    bool            `json:"ok,omitempty"`
	Value any             `json:"value,omitempty"`
	Error *toolErrorJSON  `json:"error,omitempty"`

	// done
	Status         Status  `json:"status,omitempty"`
	Result         *string `json:"result,omitempty"`
	EName          string  `json:"ename,omitempty"`
	EValue         string  `json:"evalue,omitempty"`
	Traceback      string  `json:"traceback,omitempty"`
	ExitCode       *int    `json:"exit_code,omitempty"`
	ExecutionCount int     `json:"execution_count,omitempty"`
	Interrupted    bool    `json:"interrupted,omitempty"`
	Duration       float64 `json:"duration,omitempty"`
}

// toolErrorJSON is a failed tool call as the driver receives it.
type toolErrorJSON struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Frame size bounds ([Options.MaxFrame]).
const (
	// DefaultMaxFrame is the largest protocol line the host reads from a
	// kernel unless [Options.MaxFrame] says otherwise. The driver keeps
	// its own frames far below it (output goes in 64 KiB pieces; a
	// reply's result, error and traceback are cut to fit).
	DefaultMaxFrame = 4 << 20
	// MinMaxFrame is the smallest limit accepted: one output piece must
	// fit.
	MinMaxFrame = 256 << 10
)

// ErrFrameTooLarge is why a kernel was killed when it wrote a protocol
// line longer than [Options.MaxFrame]: the host never buffers more.
var ErrFrameTooLarge = errors.New("kernel: protocol frame over the size limit")

// Each direction's MAC covers its own label, so a frame of one direction
// replayed into the other never verifies.
const (
	labelHost   = "runbox-kernel host\n"
	labelDriver = "runbox-kernel driver\n"
	macHexLen   = 2 * sha256.Size
)

// channel seals the host's frames and opens the driver's: each line is
// "\n" + hex(HMAC-SHA256(key, label+body)) + " " + body + "\n", where body
// is the frame's JSON. The leading newline ends whatever unterminated
// bytes someone else wrote before it, so such bytes cost the stream
// nothing but one rejected line.
type channel struct {
	key    []byte
	outSeq uint64 // last Seq sent; guarded by proc.inMu
	inSeq  uint64 // last Seq accepted; used by the reader only
}

func newChannel() (*channel, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("kernel: channel key: %w", err)
	}
	return &channel{key: key}, nil
}

// handshake is the first line the host writes: the key, before any code
// runs, on the driver's stdin (never in argv or the environment).
func (ch *channel) handshake(maxFrame int) []byte {
	b, _ := json.Marshal(struct {
		Key      string `json:"key"`
		MaxFrame int    `json:"max_frame"`
	}{hex.EncodeToString(ch.key), maxFrame})
	return append(b, '\n')
}

func (ch *channel) mac(label string, body []byte) []byte {
	m := hmac.New(sha256.New, ch.key)
	m.Write([]byte(label))
	m.Write(body)
	return m.Sum(nil)
}

// seal numbers f and encodes it as one authenticated line.
func (ch *channel) seal(f frame) ([]byte, error) {
	ch.outSeq++
	f.Seq = ch.outSeq
	body, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("kernel: encode %s frame: %w", f.Op, err)
	}
	line := make([]byte, 0, len(body)+macHexLen+3)
	line = append(line, '\n')
	line = hex.AppendEncode(line, ch.mac(labelHost, body))
	line = append(line, ' ')
	line = append(line, body...)
	return append(line, '\n'), nil
}

// open returns the driver's frame in line, or false when line is not one:
// no valid MAC (written by someone without the key), bad JSON, or a
// sequence number already seen.
func (ch *channel) open(line []byte) (frame, bool) {
	if len(line) < macHexLen+2 || line[macHexLen] != ' ' {
		return frame{}, false
	}
	got := make([]byte, sha256.Size)
	if _, err := hex.Decode(got, line[:macHexLen]); err != nil {
		return frame{}, false
	}
	body := line[macHexLen+1:]
	if !hmac.Equal(got, ch.mac(labelDriver, body)) {
		return frame{}, false
	}
	var f frame
	if err := json.Unmarshal(body, &f); err != nil || f.Seq <= ch.inSeq {
		return frame{}, false
	}
	ch.inSeq = f.Seq
	return f, true
}

// lineReader reads newline-terminated lines of at most max bytes. Its
// memory is bounded by max whatever the other side writes.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next non-empty line without its newline (valid until
// the next call). A line longer than max is [ErrFrameTooLarge], found
// after reading at most max+64 KiB of it. A partial line at EOF is
// dropped: the driver ends every frame with a newline.
func (lr *lineReader) next() ([]byte, error) {
	if cap(lr.buf) > 2*MinMaxFrame {
		lr.buf = nil // do not keep a large frame's buffer for small ones
	}
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(lr.buf)+len(chunk) > lr.max+1 {
			return nil, fmt.Errorf("%w: a line passed %d bytes", ErrFrameTooLarge, lr.max)
		}
		lr.buf = append(lr.buf, chunk...)
		switch {
		case err == nil:
			line := bytes.TrimRight(lr.buf, "\r\n")
			if len(line) == 0 {
				lr.buf = lr.buf[:0]
				continue
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}
