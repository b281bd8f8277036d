package ssh

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kevinburke/ssh_config"
)

// aliasConfig is what an OpenSSH client configuration says of one host
// alias: the four settings runbox honours. Empty fields are unset.
type aliasConfig struct {
	hostName, user string
	port           int
	identities     []string
}

// readAlias reads the settings for alias from the configuration at path.
// A missing file says nothing; one runbox cannot parse is an error that
// names it (set ssh.ssh_config to none to do without it).
func readAlias(path, alias, home string) (aliasConfig, error) {
	var ac aliasConfig
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ac, nil
	}
	if err != nil {
		return ac, fmt.Errorf("ssh: read %s: %w", path, err)
	}
	defer f.Close()
	cfg, err := ssh_config.Decode(f)
	if err != nil {
		return ac, fmt.Errorf("ssh: parse %s (ssh.ssh_config: none reads none): %w", path, err)
	}
	get := func(key string) (string, error) {
		v, err := cfg.Get(alias, key)
		if err != nil {
			return "", fmt.Errorf("ssh: %s: %s for %s: %w", path, key, alias, err)
		}
		return v, nil
	}
	if ac.hostName, err = get("HostName"); err != nil {
		return ac, err
	}
	ac.hostName = strings.ReplaceAll(ac.hostName, "%h", alias)
	if ac.user, err = get("User"); err != nil {
		return ac, err
	}
	port, err := get("Port")
	if err != nil {
		return ac, err
	}
	if port != "" {
		if ac.port, err = strconv.Atoi(port); err != nil || ac.port <= 0 || ac.port > 65535 {
			return ac, fmt.Errorf("ssh: %s: Port %q for %s is not a port", path, port, alias)
		}
	}
	ids, err := cfg.GetAll(alias, "IdentityFile")
	if err != nil {
		return ac, fmt.Errorf("ssh: %s: IdentityFile for %s: %w", path, alias, err)
	}
	for _, id := range ids {
		if rest, ok := strings.CutPrefix(id, "~/"); ok && home != "" {
			id = filepath.Join(home, rest)
		}
		// As with OpenSSH, a listed file that is not there is passed over.
		if _, err := os.Stat(id); err == nil {
			ac.identities = append(ac.identities, id)
		}
	}
	return ac, nil
}

// resolveTarget is where o.Host leads: its own user, host and port, with
// what it lacks from the OpenSSH configuration's entry for it, then from
// o.User and o.Port, then the defaults. It also returns the identity files
// that entry names.
func resolveTarget(o Options) (target, []string, error) {
	t, err := splitTarget(o.Host)
	if err != nil {
		return t, nil, err
	}
	var ac aliasConfig
	if o.SSHConfig != "none" {
		home := homeDir(o.Getenv)
		path := o.SSHConfig
		if path == "" && home != "" {
			path = filepath.Join(home, ".ssh", "config")
		}
		if path != "" {
			if ac, err = readAlias(path, t.host, home); err != nil {
				return t, nil, err
			}
		}
	}
	if ac.hostName != "" {
		t.host = ac.hostName
	}
	if t.user == "" {
		t.user = ac.user
	}
	if t.port == 0 {
		t.port = ac.port
	}
	t, err = t.fill(o.User, o.Port)
	return t, ac.identities, err
}
