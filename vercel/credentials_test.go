package vercel_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runbox/runbox/vercel"
)

func TestCredentialsFrom_Sources(t *testing.T) {
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"owner_id":"team_oidc","project_id":"prj_oidc"}`))
	oidc := "eyJhbGciOiJSUzI1NiJ9." + claims + ".sig"
	tests := []struct {
		name          string
		env           map[string]string
		team, project string
		source        string
		missing       string // "" means no error
	}{
		{"access token", map[string]string{"VERCEL_TOKEN": "t", "VERCEL_TEAM_ID": "team_a", "VERCEL_PROJECT_ID": "prj_a"}, "team_a", "prj_a", "VERCEL_TOKEN", ""},
		{"oidc token names its team and project", map[string]string{"VERCEL_OIDC_TOKEN": oidc}, "team_oidc", "prj_oidc", "VERCEL_OIDC_TOKEN", ""},
		{"variables win over oidc claims", map[string]string{"VERCEL_OIDC_TOKEN": oidc, "VERCEL_PROJECT_ID": "prj_b"}, "team_oidc", "prj_b", "VERCEL_OIDC_TOKEN", ""},
		{"access token wins over oidc", map[string]string{"VERCEL_TOKEN": "t", "VERCEL_OIDC_TOKEN": oidc, "VERCEL_TEAM_ID": "team_a", "VERCEL_PROJECT_ID": "prj_a"}, "team_a", "prj_a", "VERCEL_TOKEN", ""},
		{"no token", map[string]string{"VERCEL_TEAM_ID": "team_a", "VERCEL_PROJECT_ID": "prj_a"}, "", "", "", "VERCEL_TOKEN"},
		{"no project", map[string]string{"VERCEL_TOKEN": "t", "VERCEL_TEAM_ID": "team_a"}, "", "", "", "VERCEL_PROJECT_ID"},
		{"no team", map[string]string{"VERCEL_TOKEN": "t", "VERCEL_PROJECT_ID": "prj_a"}, "", "", "", "VERCEL_TEAM_ID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := vercel.CredentialsFrom(func(k string) string { return tc.env[k] })
			if tc.missing != "" {
				if !errors.Is(err, vercel.ErrNoCredentials) || !strings.Contains(err.Error(), tc.missing) {
					t.Fatalf("err = %v; want ErrNoCredentials naming %s", err, tc.missing)
				}
				return
			}
			if err != nil || c.TeamID != tc.team || c.ProjectID != tc.project || !strings.Contains(c.Source, tc.source) {
				t.Fatalf("CredentialsFrom = %+v, %v; want team %s, project %s, source %s", c, err, tc.team, tc.project, tc.source)
			}
		})
	}
}

// TestAPIError_Statuses: every refusal of the API becomes an error that
// says what to do and matches the sentinel callers branch on.
func TestAPIError_Statuses(t *testing.T) {
	tests := []struct {
		status  int
		want    error
		message string
	}{
		{http.StatusUnauthorized, vercel.ErrAuth, "refused the token from test credentials"},
		{http.StatusForbidden, vercel.ErrAuth, "refused the token"},
		{http.StatusNotFound, vercel.ErrNotFound, "not found (404)"},
		{http.StatusTooManyRequests, vercel.ErrRateLimited, "rate limited"},
		{http.StatusServiceUnavailable, nil, "Vercel's API failed (503); try again later"},
		{http.StatusBadRequest, nil, "status 400"},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(`{"error":{"code":"some_code","message":"the server's words"}}`))
			}))
			defer srv.Close()
			c := vercel.Credentials{Token: "t", TeamID: "team", ProjectID: "prj", APIURL: srv.URL, Source: "test credentials"}
			err := vercel.Check(context.Background(), c)
			var ae *vercel.APIError
			if !errors.As(err, &ae) || ae.Status != tc.status || ae.Code != "some_code" {
				t.Fatalf("err = %#v; want an APIError of status %d with the body's code", err, tc.status)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v; want it to match %v", err, tc.want)
			}
			for _, s := range []error{vercel.ErrAuth, vercel.ErrNotFound, vercel.ErrRateLimited} {
				if s != tc.want && errors.Is(err, s) {
					t.Errorf("err = %v also matches %v", err, s)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, tc.message) || !strings.Contains(msg, "the server's words") {
				t.Errorf("message = %q; want %q and the server's message", msg, tc.message)
			}
		})
	}
}
