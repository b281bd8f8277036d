// Package egress is the egress proxy of a confined session: under the
// sandbox's network allow-list mode, the confinement lets a command open
// TCP connections only to this proxy's loopback port, so the proxy
// decides every destination the command reaches.
//
// [Start] serves three protocols on one port, told apart by the first
// byte of a connection (5, the SOCKS version, starts no HTTP method):
//
//   - HTTP CONNECT: a tunnel to host:port (HTTPS, git over HTTPS, any TCP
//     protocol a client tunnels);
//   - plain HTTP with an absolute URI ("GET http://host/path"), forwarded
//     with the hop-by-hop headers removed, several requests per client
//     connection while the client keeps it alive;
//   - SOCKS5 (RFC 1928): CONNECT with a domain name, an IPv4 or an IPv6
//     address, without authentication.
//
// [Proxy.Env] gives the variables that make curl, git, pip, npm and most
// other clients use the proxy without flags.
//
// # How a destination is decided
//
// A destination is the name the client asked for — the CONNECT target,
// the SOCKS5 domain or address, the host of the absolute URI — and a port.
// Names are compared case-insensitively without a trailing dot. Each
// connection (each request, for plain HTTP) is decided in this order:
//
//  1. [Options].Deny: a matching [Rule] refuses. The deny-list wins over
//     everything below.
//  2. [Options].Allow: a matching rule allows.
//  3. An earlier answer given for the session or always
//     ([ScopeSession], [ScopeAlways]) to the same host and port.
//  4. [Options].Ask, the approval broker's question. Connections that
//     want the same destination while it is being asked about share the
//     one question and its answer. An allow answered "always" is also
//     passed to [Options].Persist. An error, or the proxy closing, is a
//     refusal.
//  5. With no Ask, a refusal whose reason says how to allow the host.
//
// A refusal is an HTTP 403 with a plain-text body an agent can read
// ("runbox sandbox: egress to HOST:PORT denied: REASON"), or SOCKS5
// reply 0x02 (connection not allowed by ruleset), and a [Violation]
// that [Proxy.Violations] returns: a runner takes the cursor before a
// command and collects what the command was refused afterwards.
// [Proxy.Check] runs steps 1–5 without connecting.
//
// # Names, addresses and DNS rebinding
//
// Rules name hosts, not addresses: a domain rule ("packages.example",
// "*.registry.example") never covers an IP literal, and an IP rule
// ("127.0.0.1:8080") never covers a name that resolves to it. "*" covers
// both. Commands never resolve names themselves (their UDP is refused):
// the proxy resolves them with [Options].Resolver and connects to the
// addresses it got, so what it decided is what it connects to.
//
// Whoever controls a domain's DNS can point it at 127.0.0.1, at the
// host's private network, or at a cloud metadata service. So a
// connection allowed by a domain rule, by "*", or by an answer about a
// domain does not reach internal addresses — loopback, private (RFC 1918,
// IPv6 ULA), link-local, unspecified, multicast, 0.0.0.0/8 and
// 100.64.0.0/10 — and is refused when the name resolves to nothing else.
// An internal address is reached only through a rule or an answer that
// names the address itself, a rule naming "localhost", or
// [Options].AllowPrivate. A resolved address that a deny rule names is
// never used. The proxy's own port on loopback is never a destination.
//
// # What it does not do
//
//   - It does not inspect or terminate TLS: an HTTPS destination is
//     decided by its CONNECT name, and what travels in the tunnel is the
//     client's business.
//   - It does not forward https:// absolute URIs, WebSocket upgrades of
//     plain HTTP, SOCKS5 BIND or UDP ASSOCIATE (reply 0x07), or SOCKS4.
//   - It does not authenticate clients: it listens on loopback (unless
//     [Options].Listen says otherwise) and the confinement decides who
//     may connect to it.
//   - It sets no time limit on an open tunnel or a response: the command
//     decides how long its connections live, and [Proxy.Close] ends them.
//     Only reading a request header or a SOCKS5 handshake is bounded, in
//     time ([Options].HeaderTimeout) and, for HTTP, in size
//     ([Options].MaxHeaderBytes; 431 beyond it).
//   - Go's net/http never sends loopback destinations to a proxy, whatever
//     NO_PROXY says; a confined Go program reaches a loopback server only
//     on a port the confinement lets it connect to directly.
//
// # Lifetime
//
// Every goroutine belongs to the [Proxy]: one accepts, one watches the
// context given to Start, each client connection has one, and each tunnel
// one more. [Proxy.Close] stops listening, closes every client and
// destination connection, cancels questions being asked, and returns once
// all of them have ended.
package egress
