package modal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	sdk "github.com/modal-labs/libmodal/modal-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// connect resolves the credentials from the launch environment and opens
// an SDK client with them. The token travels as explicit parameters: the
// SDK would read the process environment, from which runbox removed it.
func connect(getenv func(string) string, log *slog.Logger) (*sdk.Client, Credentials, error) {
	creds, err := ResolveCredentials(getenv)
	if err != nil {
		return nil, Credentials{}, err
	}
	// The SDK takes the server address from the process environment or
	// the profile file only; both are non-secret and the same as the
	// launch environment's in runbox's CLI. Differing ones are refused
	// rather than sending the token somewhere unexpected.
	if sdkURL, err := sdkServerURL(); err == nil && sdkURL != creds.ServerURL {
		return nil, Credentials{}, fmt.Errorf("modal: the launch environment names server %s but the process environment %s; set MODAL_SERVER_URL in the environment runbox is started with", creds.ServerURL, sdkURL)
	}
	// The SDK (v0.7.0) leaves its connection open when the first token
	// fetch fails; the interceptor learns the connection so it can be
	// closed here.
	var seen connSeen
	cl, err := sdk.NewClientWithOptions(&sdk.ClientParams{
		TokenID:               creds.TokenID,
		TokenSecret:           creds.TokenSecret,
		Environment:           creds.Environment,
		Logger:                log,
		GRPCUnaryInterceptors: []grpc.UnaryClientInterceptor{seen.intercept},
	})
	if err != nil {
		seen.close()
		if isAuth(err) {
			return nil, Credentials{}, fmt.Errorf("%w: the server %s refused the token from %s: %v", ErrAuth, creds.ServerURL, creds.Source, err)
		}
		return nil, Credentials{}, fmt.Errorf("modal: connect to %s (credentials from %s): %w", creds.ServerURL, creds.Source, err)
	}
	return cl, creds, nil
}

// connSeen remembers the first connection a client's calls went through.
type connSeen struct {
	mu   sync.Mutex
	conn *grpc.ClientConn
}

func (c *connSeen) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.mu.Lock()
	if c.conn == nil {
		c.conn = cc
	}
	c.mu.Unlock()
	return invoke(ctx, method, req, reply, cc, opts...)
}

func (c *connSeen) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
	}
}

// sdkServerURL is the server the SDK will dial: the process's
// MODAL_SERVER_URL, else the profile file's, else Modal's.
func sdkServerURL() (string, error) {
	c, err := ResolveCredentials(func(k string) string {
		if k == "MODAL_TOKEN_ID" || k == "MODAL_TOKEN_SECRET" {
			return "x" // only the address is wanted here
		}
		return os.Getenv(k)
	})
	return c.ServerURL, err
}

// isAuth says whether err is the server refusing the credentials.
func isAuth(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if st, ok := status.FromError(e); ok && (st.Code() == codes.Unauthenticated || st.Code() == codes.PermissionDenied) {
			return true
		}
	}
	return strings.Contains(err.Error(), "Unauthenticated")
}
