//go:build linux

package termination

import (
	"testing"
)

func TestDetect_Reports(t *testing.T) {
	d := Detect(t.Context())
	t.Logf("detection: %v; usable %v; limits %v; unified %q; v1 %v", d, d.Usable, d.Limits, d.Unified, d.V1)
	if len(d.Usable) == 0 || d.Usable[len(d.Usable)-1] != ProcessGroup {
		t.Fatalf("Usable = %v; want a list ending in process-group", d.Usable)
	}
	if d.Mechanism != d.Usable[0] {
		t.Fatalf("Mechanism = %v; want the strongest usable, %v", d.Mechanism, d.Usable[0])
	}
	for m := SystemdScope; m > d.Mechanism; m-- {
		if d.Can(m) {
			continue
		}
		if d.Why[m] == "" {
			t.Errorf("no reason given for unusable %v", m)
		}
	}
}

func TestDetection_String(t *testing.T) {
	d := Detection{Mechanism: Hybrid, Why: map[Mechanism]string{SystemdScope: "no bus", CgroupV2: "hybrid host"}}
	if got, want := d.String(), "cgroup-hybrid (not systemd-scope: no bus)"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	for m, want := range map[Mechanism]string{ProcessGroup: "process-group", CgroupV1: "cgroup-v1", CgroupV2: "cgroup-v2", Hybrid: "cgroup-hybrid", SystemdScope: "systemd-scope", 9: "Mechanism(9)"} {
		if got := m.String(); got != want {
			t.Errorf("Mechanism(%d).String() = %q; want %q", int(m), got, want)
		}
	}
}
