package modal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
)

// DefaultServerURL is Modal's API when neither MODAL_SERVER_URL nor the
// profile names another.
const DefaultServerURL = "https://api.modal.com:443"

// ErrNoCredentials is what resolving credentials wraps when no token id
// and secret were found anywhere Modal's tools look.
var ErrNoCredentials = errors.New("modal: no credentials")

// ErrAuth is what a refused token wraps.
var ErrAuth = errors.New("modal: authentication failed")

// Credentials are a resolved Modal profile: what to send and where.
type Credentials struct {
	TokenID, TokenSecret string
	Environment          string
	ServerURL            string
	// Source says where the token came from, for error messages:
	// "environment (MODAL_TOKEN_ID, MODAL_TOKEN_SECRET)" or
	// `profile "work" in /home/u/.modal.toml`. It never holds a value.
	Source string
}

// profileFile mirrors one profile of Modal's TOML file.
type profileFile struct {
	ServerURL   string `toml:"server_url"`
	TokenID     string `toml:"token_id"`
	TokenSecret string `toml:"token_secret"`
	Environment string `toml:"environment"`
	Active      bool   `toml:"active"`
}

// ResolveCredentials reads Modal's credentials the way Modal's own tools
// do, from getenv (the launch environment, not os.Getenv, whose secrets
// runbox removes at start): MODAL_TOKEN_ID and MODAL_TOKEN_SECRET,
// MODAL_ENVIRONMENT and MODAL_SERVER_URL override the profile named by
// MODAL_PROFILE (else the one marked active) in MODAL_CONFIG_PATH (else
// ~/.modal.toml). A missing file is no error; an unreadable one is.
func ResolveCredentials(getenv func(string) string) (Credentials, error) {
	path := getenv("MODAL_CONFIG_PATH")
	if path == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home != "" {
			path = filepath.Join(home, ".modal.toml")
		}
	}
	profiles := map[string]profileFile{}
	if path != "" {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return Credentials{}, fmt.Errorf("modal: read the profile file: %w", err)
		default:
			if err := toml.Unmarshal(b, &profiles); err != nil {
				return Credentials{}, fmt.Errorf("modal: parse the profile file %s: %w", path, err)
			}
		}
	}
	name := getenv("MODAL_PROFILE")
	if name == "" {
		for n, p := range profiles {
			if p.Active {
				name = n
				break
			}
		}
	}
	p := profiles[name]
	if name != "" && getenv("MODAL_PROFILE") != "" {
		if _, ok := profiles[name]; !ok {
			return Credentials{}, fmt.Errorf("%w: MODAL_PROFILE=%s names no profile in %s", ErrNoCredentials, name, path)
		}
	}
	c := Credentials{
		TokenID:     first(getenv("MODAL_TOKEN_ID"), p.TokenID),
		TokenSecret: first(getenv("MODAL_TOKEN_SECRET"), p.TokenSecret),
		Environment: first(getenv("MODAL_ENVIRONMENT"), p.Environment),
		ServerURL:   first(getenv("MODAL_SERVER_URL"), p.ServerURL, DefaultServerURL),
	}
	switch {
	case getenv("MODAL_TOKEN_ID") != "" && getenv("MODAL_TOKEN_SECRET") != "":
		c.Source = "environment (MODAL_TOKEN_ID, MODAL_TOKEN_SECRET)"
	case getenv("MODAL_TOKEN_ID") != "" || getenv("MODAL_TOKEN_SECRET") != "":
		c.Source = fmt.Sprintf("environment and profile %q in %s", name, path)
	default:
		c.Source = fmt.Sprintf("profile %q in %s", name, path)
	}
	if c.TokenID == "" || c.TokenSecret == "" {
		where := "MODAL_TOKEN_ID/MODAL_TOKEN_SECRET are not set"
		if path != "" {
			where += " and " + path + " has no profile with a token"
		}
		return Credentials{}, fmt.Errorf("%w: %s (run `modal token new`, or set them)", ErrNoCredentials, where)
	}
	return c, nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
