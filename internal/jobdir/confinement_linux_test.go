//go:build linux

package jobdir

import "testing"

// What the kernel shows of a confined process is read, and Beyond tells
// it from the process it is compared with by each of the three marks
// runbox's sandbox leaves; a process is never beyond itself.
func TestConfinement_Beyond(t *testing.T) {
	status := func(nnp, seccomp, filters, capbnd string) []byte {
		return []byte("Name:\tx\nCapBnd:\t" + capbnd + "\nNoNewPrivs:\t" + nnp + "\nSeccomp:\t" + seccomp + "\nSeccomp_filters:\t" + filters + "\n")
	}
	base, err := parseStatus(status("0", "0", "0", "000001ffffffffff"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		status []byte
		beyond bool
	}{
		{"same", status("0", "0", "0", "000001ffffffffff"), false},
		{"no_new_privs", status("1", "0", "0", "000001ffffffffff"), true},
		{"a filter", status("0", "2", "1", "000001ffffffffff"), true},
		{"capabilities dropped", status("0", "0", "0", "0000000000000000"), true},
		{"runbox's sandbox", status("1", "2", "1", "0000000000000000"), true},
	} {
		got, err := parseStatus(c.status)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Beyond(base) != c.beyond {
			t.Errorf("%s: %v beyond %v = %t; want %t", c.name, got, base, !c.beyond, c.beyond)
		}
	}
	if _, err := parseStatus([]byte("Name:\tx\n")); err == nil {
		t.Error("a status without NoNewPrivs or CapBnd was read")
	}
	self, err := SelfConfinement()
	if err != nil {
		t.Fatal(err)
	}
	if self.Beyond(self) {
		t.Errorf("%v is beyond itself", self)
	}
}
