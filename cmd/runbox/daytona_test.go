package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// doctorProvider is one provider of `runbox doctor --json`.
type doctorProvider struct {
	Name    string `json:"name"`
	Ready   bool   `json:"ready"`
	Problem string `json:"problem"`
}

func doctorDaytona(t *testing.T, env map[string]string) doctorProvider {
	t.Helper()
	return doctorBackend(t, env, "daytona")
}

// doctorBackend is the provider named name in `runbox doctor --json`.
func doctorBackend(t *testing.T, env map[string]string, name string) doctorProvider {
	t.Helper()
	out, _, code := cli(t, "", env, "doctor", "--json")
	if code != 0 {
		t.Fatalf("doctor --json: exit %d\n%s", code, out)
	}
	var rep struct {
		Providers []doctorProvider `json:"providers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	for _, p := range rep.Providers {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("doctor lists no %s provider:\n%s", name, out)
	return doctorProvider{}
}

// TestDoctor_Daytona: doctor reports missing credentials by name, and
// credentials the API refuses by where they came from.
func TestDoctor_Daytona(t *testing.T) {
	none := map[string]string{"DAYTONA_API_KEY": "", "DAYTONA_JWT_TOKEN": "", "DAYTONA_ORGANIZATION_ID": ""}
	if p := doctorDaytona(t, none); p.Ready || !strings.Contains(p.Problem, "DAYTONA_API_KEY") {
		t.Errorf("without credentials: %+v; want not ready, naming DAYTONA_API_KEY", p)
	}

	var sawAuth string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"statusCode":401,"message":"Unauthorized"}`))
	}))
	defer api.Close()
	refused := map[string]string{"DAYTONA_API_KEY": "dtn_refused", "DAYTONA_API_URL": api.URL + "/api"}
	p := doctorDaytona(t, refused)
	if p.Ready || !strings.Contains(p.Problem, "refused the credentials from environment variable DAYTONA_API_KEY") {
		t.Errorf("with a refused key: %+v; want not ready, naming where the key came from", p)
	}
	if strings.Contains(p.Problem, "dtn_refused") {
		t.Errorf("the problem shows the key: %q", p.Problem)
	}
	if sawAuth != "Bearer dtn_refused" {
		t.Errorf("the API saw Authorization %q", sawAuth)
	}
}

func TestRun_DaytonaWithoutCredentials(t *testing.T) {
	none := map[string]string{"DAYTONA_API_KEY": "", "DAYTONA_JWT_TOKEN": "", "RUNBOX_APPROVAL_MODE": "off"}
	_, stderr, code := cli(t, "", none, "run", "--backend", "daytona", "--", "true")
	if code == 0 || !strings.Contains(stderr, "no credentials") || !strings.Contains(stderr, "DAYTONA_API_KEY") {
		t.Fatalf("run --backend daytona without credentials: exit %d, stderr %q", code, stderr)
	}
}
