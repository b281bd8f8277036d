//go:build !linux

package supervisor

import "errors"

// becomeSubreaper fails: only Linux has subreapers. A job's orphans then
// go to init, and a kill finds only what /proc still ties to the job.
func becomeSubreaper() error {
	return errors.New("supervisor: no subreaper on this system")
}
