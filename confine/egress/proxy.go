package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"
)

// Defaults of the zero [Options] fields.
const (
	DefaultHeaderTimeout  = 30 * time.Second
	DefaultMaxHeaderBytes = 64 << 10
	DefaultDialTimeout    = 30 * time.Second
	// maxViolations bounds the kept violations; older ones are dropped
	// (the cursor of [Proxy.Violations] keeps counting).
	maxViolations = 4096
)

// Options configure a [Proxy]. Start copies them.
type Options struct {
	// Allow are the destinations reachable without asking.
	Allow []Rule
	// Deny are destinations never reachable; they win over Allow, over
	// remembered answers and over Ask.
	Deny []Rule
	// Ask is asked about a destination on neither list. Nil means such a
	// destination is refused with a reason saying how to allow it.
	Ask Asker
	// Persist is called with the destination of an allow answered with
	// ScopeAlways, so that the caller can add it to the configuration.
	// Nil means such an answer lasts for the session only. An error is
	// logged; the answer still holds for the session.
	Persist func(Rule) error
	// AllowPrivate lets domain rules (and "*", and allowed answers about
	// domains) reach internal addresses: loopback, private, link-local,
	// unspecified, multicast and carrier-grade NAT ranges. False, the
	// default, means only a rule that names the address itself, or
	// "localhost", reaches such an address: a domain on the allow-list
	// cannot be pointed at the host's own services or the cloud's
	// metadata service by whoever controls its DNS.
	AllowPrivate bool
	// Logger receives one line per refusal and per answer. Nil discards.
	Logger *slog.Logger
	// Listen is the TCP address to serve on. Empty means "127.0.0.1:0"
	// (loopback, a free port).
	Listen string
	// Resolver resolves the names clients ask for. Nil means
	// net.DefaultResolver. Commands never resolve names themselves.
	Resolver *net.Resolver
	// HeaderTimeout bounds the reading of a request's header (HTTP) or
	// of the handshake (SOCKS5). Zero means DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// MaxHeaderBytes bounds an HTTP request's header. Zero means
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// DialTimeout bounds each connection attempt to a destination. Zero
	// means DefaultDialTimeout.
	DialTimeout time.Duration
}

// Violation is one refused destination.
type Violation struct {
	Host   string
	Port   int
	Reason string
	// Rule is the rule that refused, if one did ("" when the host is
	// simply not on the allow-list).
	Rule string
	Time time.Time
}

// Proxy is a running egress proxy; see the package documentation.
type Proxy struct {
	opts   Options
	log    *slog.Logger
	ln     net.Listener
	policy *policy
	ctx    context.Context // cancelled by Close; bounds asks and dials
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	conns    map[net.Conn]struct{} // every open client and upstream connection
	wg       sync.WaitGroup        // every goroutine the Proxy started
	vbase    int                   // cursor of violations[0]
	violated []Violation
}

// Start listens and serves until [Proxy.Close]. ctx is the Proxy's
// lifetime: cancelling it closes the Proxy as Close does (Close must still
// be called to wait for the goroutines).
func Start(ctx context.Context, o Options) (*Proxy, error) {
	o = withDefaults(o)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("egress: listening on %s: %w", o.Listen, err)
	}
	p := &Proxy{
		opts:  o,
		log:   o.Logger,
		ln:    ln,
		conns: map[net.Conn]struct{}{},
		policy: &policy{
			allow: o.Allow, deny: o.Deny, ask: o.Ask, persist: o.Persist,
			allowPrivate: o.AllowPrivate, log: o.Logger,
			answers: map[hostPort]bool{}, asking: map[hostPort]*question{},
		},
	}
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.goroutine(p.acceptLoop)
	p.goroutine(func() {
		<-p.ctx.Done()
		p.shutdown()
	})
	return p, nil
}

func withDefaults(o Options) Options {
	o.Allow = append([]Rule(nil), o.Allow...)
	o.Deny = append([]Rule(nil), o.Deny...)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	return o
}

// Addr is the address the Proxy listens on ("127.0.0.1:PORT").
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the TCP port the Proxy listens on: the one port a confined
// command may connect to.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Env is what a command needs so that curl, git, pip, npm and Go's
// net/http use the Proxy without flags: HTTP_PROXY, HTTPS_PROXY (both
// http://ADDR, CONNECT for https) and ALL_PROXY (socks5h://ADDR: names are
// resolved by the Proxy), each also in lower case, and NO_PROXY empty so
// that loopback destinations too go through the Proxy and its lists.
// (Go's net/http never proxies loopback destinations whatever NO_PROXY
// says; a confined Go program reaches loopback only on ports the
// confinement allows directly.)
func (p *Proxy) Env() map[string]string {
	httpURL := "http://" + p.Addr()
	socksURL := "socks5h://" + p.Addr()
	return map[string]string{
		"HTTP_PROXY": httpURL, "http_proxy": httpURL,
		"HTTPS_PROXY": httpURL, "https_proxy": httpURL,
		"ALL_PROXY": socksURL, "all_proxy": socksURL,
		"NO_PROXY": "", "no_proxy": "",
	}
}

// Check applies the lists, remembered answers and Ask to host:port, as a
// connection to it would, without connecting, resolving or recording a
// violation. It may ask; ctx bounds the wait.
func (p *Proxy) Check(ctx context.Context, host string, port int) (Verdict, string) {
	d := p.policy.decide(ctx, normalizeHost(host), port)
	return d.verdict, d.reason
}

// Violations returns the refusals recorded since cursor since (0 for
// all), oldest first, and the cursor to pass next time. A runner takes
// the cursor before a command and asks with it afterwards. Only the
// latest refusals are kept (a few thousand).
func (p *Proxy) Violations(since int) ([]Violation, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := p.vbase + len(p.violated)
	since = max(since, p.vbase)
	if since >= end {
		return nil, end
	}
	return append([]Violation(nil), p.violated[since-p.vbase:]...), end
}

func (p *Proxy) record(e *DeniedError) {
	p.log.Warn("egress: refused", "host", e.Host, "port", e.Port, "reason", e.Reason)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.violated = append(p.violated, Violation{Host: e.Host, Port: e.Port, Reason: e.Reason, Rule: e.Rule, Time: time.Now()})
	if len(p.violated) > maxViolations {
		drop := len(p.violated) - maxViolations/2
		p.vbase += drop
		p.violated = append([]Violation(nil), p.violated[drop:]...)
	}
}

// Close stops listening, closes every connection and waits for every
// goroutine of the Proxy. Questions being asked are cancelled.
func (p *Proxy) Close() error {
	p.cancel()
	p.shutdown()
	p.wg.Wait()
	return nil
}

// shutdown marks the Proxy closed and closes the listener and every
// connection, which ends every goroutine blocked on them.
func (p *Proxy) shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
}

// goroutine runs f in a goroutine Close waits for, unless the Proxy is
// closed already. Adding under mu, which Close takes before it waits,
// keeps Add from racing with Wait.
func (p *Proxy) goroutine(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
	return true
}

// track registers c to be closed by Close; it closes c and returns false
// when the Proxy is closed already. untrack closes c.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.log.Error("egress: accept", "err", err)
			}
			return
		}
		if !p.track(c) {
			return
		}
		if !p.goroutine(func() { p.serveConn(c) }) {
			p.untrack(c)
			return
		}
	}
}

// serveConn tells SOCKS5 from HTTP by the first byte (a SOCKS5 greeting
// starts with its version, 5; no HTTP method does) and serves c.
func (p *Proxy) serveConn(c net.Conn) {
	defer p.untrack(c)
	c.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		p.serveSOCKS(c, br)
		return
	}
	p.serveHTTP(c, br)
}

// allowed decides about host:port and records a refusal.
func (p *Proxy) allowed(host string, port int) (decision, error) {
	if host == "" || port < 1 || port > 65535 {
		return decision{}, fmt.Errorf("egress: bad destination %q port %d", host, port)
	}
	d := p.policy.decide(p.ctx, host, port)
	if d.verdict != Allow {
		err := &DeniedError{Host: host, Port: port, Reason: d.reason, Rule: d.rule}
		p.record(err)
		return d, err
	}
	return d, nil
}

// connect dials host:port, which d allowed, records a refusal of its
// addresses, and registers the connection for Close.
func (p *Proxy) connect(host string, port int, d decision) (net.Conn, error) {
	up, err := p.dial(p.ctx, host, port, d)
	var denied *DeniedError
	if errors.As(err, &denied) {
		p.record(denied)
	}
	if err != nil {
		return nil, err
	}
	if !p.track(up) {
		return nil, net.ErrClosed
	}
	return up, nil
}

// open is allowed then connect.
func (p *Proxy) open(host string, port int) (net.Conn, error) {
	d, err := p.allowed(host, port)
	if err != nil {
		return nil, err
	}
	return p.connect(host, port, d)
}

func hostPortString(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
