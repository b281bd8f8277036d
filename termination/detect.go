package termination

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Detection says which containment mechanisms work on this machine and,
// for each one that does not, why. It backs Capabilities() of the local
// backend and `runbox doctor`.
type Detection struct {
	// Mechanism is the strongest usable mechanism ([ProcessGroup] when
	// nothing else is).
	Mechanism Mechanism
	// Usable lists every usable mechanism, strongest first. It always ends
	// with [ProcessGroup].
	Usable []Mechanism
	// Why maps each unusable mechanism to the reason.
	Why map[Mechanism]string
	// Bus is the D-Bus bus the systemd manager answered on: "system" or
	// "user". Empty when no manager was reached.
	Bus string
	// Unified is the mountpoint of the cgroup v2 hierarchy, "" when none
	// ("/sys/fs/cgroup" on unified hosts, "/sys/fs/cgroup/unified" on hybrid ones).
	Unified string
	// V1 maps each cgroup v1 controller runbox uses (freezer, pids, memory,
	// cpu) to its mountpoint.
	V1 map[string]string
	// Limits lists the limits a cgroup container can enforce here:
	// "memory", "pids", "cpu". Scopes enforce what systemd can.
	Limits []string
}

// Can reports whether m is usable.
func (d Detection) Can(m Mechanism) bool { return slices.Contains(d.Usable, m) }

// String is one line for `runbox doctor`: the mechanism in use, then why
// each stronger one is not.
func (d Detection) String() string {
	var b strings.Builder
	b.WriteString(d.Mechanism.String())
	var why []string
	for m := SystemdScope; m > d.Mechanism; m-- {
		if r, ok := d.Why[m]; ok {
			// One line: joined errors carry newlines.
			why = append(why, fmt.Sprintf("%v: %s", m, strings.ReplaceAll(r, "\n", "; ")))
		}
	}
	if len(why) > 0 {
		b.WriteString(" (not ")
		b.WriteString(strings.Join(why, "; not "))
		b.WriteString(")")
	}
	return b.String()
}

// Detect probes this machine: a systemd manager on D-Bus (the system bus
// as root, else the user bus), the cgroup mounts in /proc/self/mountinfo
// and whether this process may create cgroups there. It changes nothing.
// ctx bounds the D-Bus probe.
func Detect(ctx context.Context) Detection {
	d := Detection{Why: map[Mechanism]string{}}
	probeCgroups(&d)
	if bus, err := probeSystemd(ctx); err != nil {
		d.Why[SystemdScope] = err.Error()
	} else {
		d.Bus = bus
		d.Usable = append(d.Usable, SystemdScope)
	}
	for _, m := range []Mechanism{Hybrid, CgroupV2, CgroupV1} {
		if _, bad := d.Why[m]; !bad {
			d.Usable = append(d.Usable, m)
		}
	}
	d.Usable = append(d.Usable, ProcessGroup)
	d.Mechanism = d.Usable[0]
	return d
}
