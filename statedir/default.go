package statedir

import "path/filepath"

// Default is runbox's state directory for the environment getenv reads:
// $RUNBOX_STATE_DIR (made absolute), else $XDG_STATE_HOME/runbox (when
// absolute: the XDG rules ignore a relative one), else
// ~/.local/state/runbox; "" when none of them is set. It only names the
// directory: [Prepare] checks it before anything is written there.
func Default(getenv func(string) string) string {
	if d := getenv("RUNBOX_STATE_DIR"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "runbox")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "runbox")
	}
	return ""
}
