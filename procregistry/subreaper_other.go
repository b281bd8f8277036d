//go:build !linux

package procregistry

import "errors"

// becomeSubreaper fails: only Linux has subreapers. A job's orphans then
// go to init, and a kill finds only what /proc still ties to the job.
func becomeSubreaper() error {
	return errors.New("procregistry: no subreaper on this system")
}
