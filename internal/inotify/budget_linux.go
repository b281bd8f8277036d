package inotify

import (
	"os"
	"strconv"
	"strings"
)

// Budget is how many watches one of runbox's watchers may hold: an eighth
// of the user's limit (fs.inotify.max_user_watches), at least 1,024. The
// limit is the user's, shared by every program they run: a command that
// makes a huge tree would otherwise have runbox's watches, one a
// directory, take all of it for the session's life, and every other
// program's fail. A watcher over its budget watches no more and works as
// without inotify where it does not watch.
func Budget() int {
	n := 8192 << 3 // the usual default, when the limit cannot be read
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
			n = v
		}
	}
	return max(n/8, 1024)
}
