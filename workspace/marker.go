package workspace

import (
	"context"
	"crypto/rand"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
)

// A manifest describes one tree in one sandbox. The sandbox can be
// replaced under it (a container removed and made again, an image
// changed, a directory deleted), and a manifest then taken for the new
// tree's base would make every pushed file look deleted there: an apply
// would delete the user's files. So every full push writes a marker
// into the tree it sends, a file holding a fresh identity that the
// manifest records too, and nothing trusts the manifest for a tree that
// does not hold the same identity:
//   - a push into such a tree is a full push, and what the tree held is
//     moved aside in the sandbox (never deleted: it may be work);
//   - a comparison with such a tree has no base: nothing in it is taken
//     for a deletion, and a file both trees hold with different content
//     is a conflict, for a person to settle.
//
// The marker is a file of the tree's top directory, never sent from the
// local directory, never brought back and never compared.

// MarkerName is the name of the marker file in the sandbox's directory.
const MarkerName = ".runbox-sync"

// markerPrefix starts the marker's content.
const markerPrefix = "runbox-sync "

// newTreeID returns a fresh identity for a tree a full push makes.
func newTreeID() string { return rand.Text() }

// markerContent is the marker file's content for id.
func markerContent(id string) []byte { return []byte(markerPrefix + id + "\n") }

// parseMarker returns the identity in a marker file's content, "" when
// the content is not a marker.
func parseMarker(b []byte) string {
	s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), markerPrefix)
	if !ok || s == "" || strings.ContainsAny(s, " \n") {
		return ""
	}
	return s
}

// remoteState is what a push finds at the sandbox's directory.
type remoteState struct {
	id    string // the marker's identity, "" when there is none
	empty bool   // the directory is missing or holds nothing
}

// why says, for a user, why the directory is not the tree last pushed.
func (r remoteState) why() string {
	switch {
	case r.empty:
		return "it is empty or missing"
	case r.id == "":
		return "it holds no " + MarkerName + " marker"
	}
	return "its " + MarkerName + " marker names another push"
}

// probeScript prints "absent", "empty", "marker ID" or "full" for the
// directory $1.
const probeScript = `cd -- "$1" 2>/dev/null || { echo absent; exit 0; }
if [ -f ` + MarkerName + ` ] && [ ! -L ` + MarkerName + ` ]; then printf 'marker '; head -c 200 ` + MarkerName + ` | tr '\n' ' '; echo
elif [ -n "$(ls -A)" ]; then echo full
else echo empty
fi`

// probeRemote reports what the sandbox's directory dir holds.
func probeRemote(ctx context.Context, env envs.Environment, dir string) (remoteState, error) {
	res, err := env.Run(ctx, envs.Command{Args: []string{"sh", "-c", probeScript, "sh", dir}, Dir: "/", SeparateStreams: true, OutputLimit: 4096})
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		return remoteState{}, fmt.Errorf("workspace: look at the sandbox's %s: %w", dir, err)
	}
	out := strings.TrimSpace(res.Output)
	switch {
	case out == "absent" || out == "empty":
		return remoteState{empty: true}, nil
	case strings.HasPrefix(out, "marker "):
		return remoteState{id: parseMarker([]byte(strings.TrimPrefix(out, "marker ")))}, nil
	case out == "full":
		return remoteState{}, nil
	}
	return remoteState{}, fmt.Errorf("workspace: look at the sandbox's %s: unexpected answer %q", dir, out)
}

// moveAside renames the sandbox's directory dir to a new name beside it
// and returns that name: what a tree runbox did not push held is kept.
func moveAside(ctx context.Context, env envs.Environment, dir string) (string, error) {
	aside := dir + ".runbox-before-" + time.Now().UTC().Format("20060102T150405Z") + "-" + strings.ToLower(rand.Text()[:6])
	if err := runIn(ctx, env, "/", nil, "mv", "--", dir, aside); err != nil {
		return "", fmt.Errorf("workspace: move %s aside before a full push: %w", dir, err)
	}
	return aside, nil
}

// isMarker reports whether rel (a slash-separated path relative to the
// tree's top) is the marker.
func isMarker(rel string) bool { return path.Clean(rel) == MarkerName }
