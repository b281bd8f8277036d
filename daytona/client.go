package daytona

import (
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	sdkerr "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
)

// newClient makes the SDK client from c. Every field is given explicitly,
// so the SDK's own fallback to this process's environment never decides
// which account is used.
func newClient(c Credentials) (*sdk.Client, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	cl, err := sdk.NewClientWithConfig(&types.DaytonaConfig{
		APIKey: c.APIKey, JWTToken: c.JWTToken, OrganizationID: c.OrganizationID,
		APIUrl: c.url(), Target: c.Target,
	})
	if err != nil {
		return nil, fmt.Errorf("daytona: client (credentials from %s): %w", c.Source, err)
	}
	return cl, nil
}

// apiError wraps an SDK error from the control plane, naming where the
// credentials came from when the API refused them.
func apiError(c Credentials, op string, err error) error {
	switch status(err) {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("daytona: %s: the API at %s refused the credentials from %s: %w", op, c.url(), c.Source, err)
	}
	return fmt.Errorf("daytona: %s (API %s): %w", op, c.url(), err)
}

// status is the HTTP status of an SDK error, 0 when it has none.
func status(err error) int {
	var nf *sdkerr.DaytonaNotFoundError
	if errors.As(err, &nf) {
		return http.StatusNotFound
	}
	var de *sdkerr.DaytonaError
	if errors.As(err, &de) {
		return de.StatusCode
	}
	return 0
}
