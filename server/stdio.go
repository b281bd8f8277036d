package server

import (
	"context"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client over r (its requests, runbox's stdin) and
// w (the responses, runbox's stdout) until the client closes r or ctx
// ends. Nothing else may write to w. The client's session is torn down by
// [Server.Close], which waits for it; call it after ServeStdio returns.
func (s *Server) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
