package jobdir

// The control socket (FileCtl) of a running job's supervisor takes one
// JSON CtlRequest per connection and answers with one CtlResponse.

// CtlOp is what a CtlRequest asks for.
type CtlOp string

const (
	OpWrite  CtlOp = "write"  // write Data to the command's stdin
	OpClose  CtlOp = "close"  // end its stdin (^D on a terminal)
	OpWait   CtlOp = "wait"   // answer once the command has exited, with its ExitRecord
	OpResize CtlOp = "resize" // set the terminal's size to Rows x Cols
)

// CtlRequest is one request on a supervisor's control socket.
type CtlRequest struct {
	Op   CtlOp  `json:"op"`
	Data []byte `json:"data,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
}

// CtlResponse answers a CtlRequest.
type CtlResponse struct {
	OK    bool        `json:"ok,omitempty"`
	Error string      `json:"error,omitempty"`
	Exit  *ExitRecord `json:"exit,omitempty"`
}
