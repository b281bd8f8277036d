package modal

import (
	"context"
	"fmt"

	sdk "github.com/modal-labs/libmodal/modal-go"
)

// Reap terminates the running sandboxes of app tagged as runbox's and as
// owner's (all owners' when owner is ""): those a crashed or killed runbox
// left behind, which Modal would otherwise keep until their timeout. It
// returns the ids it terminated.
func Reap(ctx context.Context, getenv func(string) string, app, owner string) ([]string, error) {
	if app == "" {
		app = DefaultApp
	}
	cl, creds, err := connect(getenv, nil)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	s := &sandbox{creds: creds}
	a, err := cl.Apps.FromName(ctx, app, nil)
	if err != nil {
		return nil, s.wrap("look up app "+app, err)
	}
	tags := map[string]string{TagManaged: "1"}
	if owner != "" {
		tags[TagOwner] = owner
	}
	list, err := cl.Sandboxes.List(ctx, &sdk.SandboxListParams{AppID: a.AppID, Tags: tags})
	if err != nil {
		return nil, s.wrap("list sandboxes", err)
	}
	var found []*sdk.Sandbox
	for sb, err := range list {
		if err != nil {
			return nil, s.wrap("list sandboxes", err)
		}
		found = append(found, sb)
	}
	var ids []string
	for _, sb := range found {
		if _, err := sb.Terminate(ctx, nil); err != nil {
			return ids, fmt.Errorf("modal: reap %s: %w", sb.SandboxID, err)
		}
		ids = append(ids, sb.SandboxID)
	}
	return ids, nil
}
