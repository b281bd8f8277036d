package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// hopHeaders are the hop-by-hop headers (RFC 9110 section 7.6.1, plus
// the proxy ones clients still send) that are never forwarded.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// upstream is the connection a client connection's plain-HTTP requests
// go out on; it is kept while they go to the same destination.
type upstream struct {
	dest hostPort
	conn net.Conn
	br   *bufio.Reader
}

func (u *upstream) close(p *Proxy) {
	if u.conn != nil {
		p.untrack(u.conn)
		*u = upstream{}
	}
}

// serveHTTP serves the requests of one client connection: a CONNECT
// becomes a tunnel; absolute-URI requests are forwarded one by one while
// the client keeps the connection alive.
func (p *Proxy) serveHTTP(c net.Conn, raw *bufio.Reader) {
	// Header bytes are counted from the connection: the limit is raised
	// while a body streams and restored before the next header.
	lr := &io.LimitedReader{R: raw, N: int64(p.opts.MaxHeaderBytes)}
	br := bufio.NewReader(lr)
	var up upstream
	defer up.close(p)
	for {
		c.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout))
		lr.N = int64(p.opts.MaxHeaderBytes)
		req, err := http.ReadRequest(br)
		if err != nil {
			if lr.N <= 0 {
				writeStatus(c, http.StatusRequestHeaderFieldsTooLarge, "runbox egress proxy: request header too large\n")
			} else if !errors.Is(err, io.EOF) && !isTimeout(err) {
				writeStatus(c, http.StatusBadRequest, "runbox egress proxy: malformed request\n")
			}
			return
		}
		lr.N = math.MaxInt64
		c.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			up.close(p)
			p.serveConnect(c, br, req)
			return
		}
		if !p.forward(c, req, &up) {
			return
		}
	}
}

// serveConnect opens the tunnel a CONNECT asks for.
func (p *Proxy) serveConnect(c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := splitHostPort(req.RequestURI, 0)
	if err != nil {
		writeStatus(c, http.StatusBadRequest, "runbox egress proxy: CONNECT needs host:port: "+err.Error()+"\n")
		return
	}
	up, err := p.open(host, port)
	if err != nil {
		writeError(c, err)
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		p.untrack(up)
		return
	}
	p.splice(c, br, up)
}

// forward sends one absolute-URI request to its destination and its
// response back, and says whether the client connection may carry
// another request.
func (p *Proxy) forward(c net.Conn, req *http.Request, up *upstream) bool {
	defer req.Body.Close()
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		writeStatus(c, http.StatusBadRequest, "runbox egress proxy: only CONNECT and absolute http:// URIs are served; set HTTP_PROXY and HTTPS_PROXY\n")
		return false
	}
	host, port, err := splitHostPort(req.URL.Host, 80)
	if err != nil {
		writeStatus(c, http.StatusBadRequest, "runbox egress proxy: "+err.Error()+"\n")
		return false
	}
	d, err := p.allowed(host, port)
	if err != nil {
		writeError(c, err)
		return false
	}
	// The client waits for a 100 before it sends the body; the
	// destination gets the body without being asked.
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		req.Header.Del("Expect")
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	clientClose := req.Close
	outgoing(req)
	resp, err := p.roundTrip(up, hostPort{host, port}, d, req)
	if err != nil {
		writeError(c, err)
		return false
	}
	defer resp.Body.Close()
	upClose := resp.Close
	keep := !clientClose && req.ProtoAtLeast(1, 1) && delimited(req, resp) && resp.StatusCode != http.StatusSwitchingProtocols
	removeHop(resp.Header)
	resp.Close = !keep
	err = resp.Write(c)
	if upClose || err != nil {
		up.close(p)
	}
	return keep && err == nil
}

// roundTrip sends req to dest over up, which it opens or replaces when
// it is not a connection to dest. A kept connection the destination
// closed while idle fails at once; a request without a body is then
// sent once more on a new connection, as an HTTP client would.
func (p *Proxy) roundTrip(up *upstream, dest hostPort, d decision, req *http.Request) (*http.Response, error) {
	reused := up.conn != nil && up.dest == dest
	if !reused {
		up.close(p)
		conn, err := p.connect(dest.host, dest.port, d)
		if err != nil {
			return nil, err
		}
		*up = upstream{dest: dest, conn: conn, br: bufio.NewReader(conn)}
	}
	err := req.Write(up.conn)
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(up.br, req)
	}
	// Informational responses (103 Early Hints, an unasked 100) are
	// dropped: the client gets the final one.
	for err == nil && resp.StatusCode/100 == 1 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(up.br, req)
	}
	if err == nil {
		return resp, nil
	}
	up.close(p)
	if reused && req.Body == http.NoBody {
		return p.roundTrip(up, dest, d, req)
	}
	return nil, fmt.Errorf("exchanging with %s: %w", hostPortString(dest.host, dest.port), err)
}

// outgoing makes req, read from a client, ready to be written to its
// destination in origin form.
func outgoing(req *http.Request) {
	removeHop(req.Header)
	// The destination is the one decided on, so the Host header names it
	// too (RFC 9112 section 3.2.2: a proxy replaces it with the target's).
	req.Host = req.URL.Host
	req.Close = false
	// Request.Write adds Go's User-Agent when none is set; an empty one
	// keeps the client's choice of sending none.
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""}
	}
}

// removeHop deletes the hop-by-hop headers and those Connection names.
func removeHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// delimited says whether resp's end can be told without closing the
// connection: a length, chunked coding (Response.Write re-chunks what
// the destination sent chunked), or a response that has no body.
func delimited(req *http.Request, resp *http.Response) bool {
	noBody := req.Method == http.MethodHead || resp.StatusCode/100 == 1 ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	return noBody || resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0
}

// writeError answers a refused or failed connection: 403 with the
// reason for a refusal, 502 for anything else. The body is plain text
// an agent can read.
func writeError(c net.Conn, err error) {
	var denied *DeniedError
	if errors.As(err, &denied) {
		writeStatus(c, http.StatusForbidden, denied.Error()+"\n")
		return
	}
	writeStatus(c, http.StatusBadGateway, "runbox egress proxy: "+err.Error()+"\n")
}

// writeStatus writes a complete response and asks the client to close.
func writeStatus(c net.Conn, code int, body string) {
	c.SetWriteDeadline(time.Now().Add(DefaultHeaderTimeout))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
	c.SetWriteDeadline(time.Time{})
}

// splitHostPort splits "host:port" (IPv6 in brackets), using defPort when
// there is no port and defPort is not 0, and normalises the host.
func splitHostPort(s string, defPort int) (string, int, error) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		if defPort == 0 {
			return "", 0, err
		}
		host, ps = s, strconv.Itoa(defPort)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", ps)
	}
	h := normalizeHost(host)
	if !isIPLiteral(h) && checkDomain(h) != nil {
		return "", 0, fmt.Errorf("bad host %q", host)
	}
	return h, port, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
