package procregistry

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"time"
)

// ctlCall sends one request to the supervisor of the job in dir and
// reads its answer. ctx bounds the whole exchange.
func ctlCall(ctx context.Context, dir string, req ctlRequest) (ctlResponse, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", filepath.Join(dir, fileCtl))
	if err != nil {
		return ctlResponse{}, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return ctlResponse{}, err
	}
	var resp ctlResponse
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		return resp, err
	}
	return resp, nil
}
