package daytona

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
)

// defaultAutoStop is the auto-stop interval, in minutes, that Daytona
// gives a sandbox created without one.
const defaultAutoStop = 15

// KeepAwake turns the sandbox's auto-stop off (on) or back to what it was
// (off). Daytona stops a sandbox after its auto-stop interval without an
// API or toolbox call, whatever runs in it: a keep-awake job would be
// stopped with it while the agent waits. A persistent task's sandbox has
// no auto-stop, and one not made yet has nothing to change.
func (s *sandbox) KeepAwake(ctx context.Context, on bool) error {
	if s.opts.Persistent {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return nil
	}
	api, err := newAPIClient(s.opts.Credentials, s.toolbox)
	if err != nil {
		return err
	}
	actx := context.WithValue(ctx, apiclient.ContextAccessToken, s.opts.Credentials.token())
	interval := s.autoStop
	if on {
		if s.awake {
			return nil
		}
		got, resp, err := api.SandboxAPI.GetSandbox(actx, s.last.ID).Execute()
		if err != nil {
			return apiError(s.opts.Credentials, "get sandbox "+s.last.ID, apiErr(err, resp))
		}
		if iv := got.AutoStopInterval; iv != nil && *iv > 0 {
			s.autoStop = *iv
		}
		interval = 0
	} else if !s.awake {
		return nil
	}
	if interval == 0 && !on {
		interval = defaultAutoStop
	}
	_, resp, err := api.SandboxAPI.SetAutostopInterval(actx, s.last.ID, interval).Execute()
	if err != nil {
		return apiError(s.opts.Credentials, fmt.Sprintf("set the auto-stop interval of sandbox %s to %v minutes", s.last.ID, interval), apiErr(err, resp))
	}
	s.awake = on
	s.log.Debug("daytona: auto-stop", "sandbox", s.last.ID, "minutes", interval)
	return nil
}

// newAPIClient is the official generated API client for the calls the
// SDK does not wrap (the auto-stop interval), configured as the SDK
// configures its own.
func newAPIClient(c Credentials, hc *http.Client) (*apiclient.APIClient, error) {
	u, err := url.Parse(c.url())
	if err != nil {
		return nil, fmt.Errorf("daytona: API URL %q: %w", c.url(), err)
	}
	cfg := apiclient.NewConfiguration()
	cfg.Host, cfg.Scheme, cfg.HTTPClient = u.Host, u.Scheme, hc
	cfg.Servers = apiclient.ServerConfigurations{{URL: u.Scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/")}}
	if c.JWTToken != "" {
		cfg.AddDefaultHeader("X-Daytona-Organization-ID", c.OrganizationID)
	}
	return apiclient.NewAPIClient(cfg), nil
}

// apiErr adds the response's status to an error of the generated client.
func apiErr(err error, resp *http.Response) error {
	if resp == nil {
		return err
	}
	return fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
}
