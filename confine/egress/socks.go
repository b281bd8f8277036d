package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
)

// SOCKS5 (RFC 1928) constants the proxy uses.
const (
	socksVersion   = 5
	socksNoAuth    = 0x00
	socksNoMethod  = 0xff
	socksConnect   = 0x01
	socksAtypIPv4  = 0x01
	socksAtypName  = 0x03
	socksAtypIPv6  = 0x04
	socksSucceeded = 0x00
	socksFailure   = 0x01
	socksNotAllowd = 0x02 // connection not allowed by ruleset
	socksHostUnrch = 0x04
	socksRefused   = 0x05
	socksBadCmd    = 0x07
	socksBadAtyp   = 0x08
)

// serveSOCKS serves one SOCKS5 connection: no authentication, CONNECT
// only (BIND and UDP ASSOCIATE are refused with 0x07: UDP does not leave
// a confined command), destinations given as names (resolved here, as
// socks5h asks) or addresses.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	if !socksGreet(c, br) {
		return
	}
	cmd, host, port, rep := socksRequest(br)
	if rep == socksSucceeded && cmd != socksConnect {
		rep = socksBadCmd
	}
	if rep != socksSucceeded {
		socksReply(c, rep, nil)
		return
	}
	up, err := p.open(host, port)
	if err != nil {
		socksReply(c, socksCode(err), nil)
		return
	}
	if err := socksReply(c, socksSucceeded, up.LocalAddr()); err != nil {
		p.untrack(up)
		return
	}
	p.splice(c, br, up)
}

// socksGreet reads the client's methods and picks "no authentication".
func socksGreet(c net.Conn, br *bufio.Reader) bool {
	var head [2]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return false
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return false
	}
	for _, m := range methods {
		if m == socksNoAuth {
			_, err := c.Write([]byte{socksVersion, socksNoAuth})
			return err == nil
		}
	}
	c.Write([]byte{socksVersion, socksNoMethod})
	return false
}

// socksRequest reads a request; rep is socksSucceeded when it parsed.
func socksRequest(br *bufio.Reader) (cmd byte, host string, port int, rep byte) {
	var head [4]byte
	if _, err := io.ReadFull(br, head[:]); err != nil || head[0] != socksVersion {
		return 0, "", 0, socksFailure
	}
	cmd = head[1]
	var addr []byte
	switch head[3] {
	case socksAtypIPv4:
		addr = make([]byte, 4)
	case socksAtypIPv6:
		addr = make([]byte, 16)
	case socksAtypName:
		n, err := br.ReadByte()
		if err != nil {
			return 0, "", 0, socksFailure
		}
		addr = make([]byte, n)
	default:
		return 0, "", 0, socksBadAtyp
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, addr); err != nil {
		return 0, "", 0, socksFailure
	}
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return 0, "", 0, socksFailure
	}
	port = int(binary.BigEndian.Uint16(pb[:]))
	if head[3] == socksAtypName {
		host = normalizeHost(string(addr))
		if !isIPLiteral(host) && checkDomain(host) != nil {
			return cmd, "", 0, socksHostUnrch
		}
	} else {
		a, _ := netip.AddrFromSlice(addr)
		host = a.Unmap().String()
	}
	return cmd, host, port, socksSucceeded
}

// socksReply writes a reply; bound is the proxy's end of the upstream
// connection, or nil.
func socksReply(c net.Conn, rep byte, bound net.Addr) error {
	b := []byte{socksVersion, rep, 0}
	ap := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if ta, ok := bound.(*net.TCPAddr); ok {
		ap = ta.AddrPort()
	}
	if a := ap.Addr().Unmap(); a.Is4() {
		b = append(b, socksAtypIPv4)
		b = append(b, a.AsSlice()...)
	} else {
		b = append(b, socksAtypIPv6)
		b = append(b, a.AsSlice()...)
	}
	b = binary.BigEndian.AppendUint16(b, ap.Port())
	_, err := c.Write(b)
	return err
}

// socksCode maps a failure to connect to its SOCKS5 reply.
func socksCode(err error) byte {
	var denied *DeniedError
	switch {
	case errors.As(err, &denied):
		return socksNotAllowd
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksRefused
	default:
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return socksHostUnrch
		}
		return socksFailure
	}
}
