package egress

import (
	"io"
	"net"
	"time"
)

// splice copies between the client (reading through cr, which may hold
// bytes the client sent early) and up until both directions end, then
// closes up. Each direction's end is passed on as a half-close, so a
// protocol that ends with one side's EOF finishes. An idle tunnel stays
// open: the command decides how long its connections live, and Close
// ends every tunnel.
func (p *Proxy) splice(client net.Conn, cr io.Reader, up net.Conn) {
	defer p.untrack(up)
	client.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	started := p.goroutine(func() {
		defer close(done)
		io.Copy(up, cr)
		closeWrite(up)
	})
	if !started {
		return
	}
	io.Copy(client, up)
	closeWrite(client)
	<-done
}

// closeWrite half-closes c where it can.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
