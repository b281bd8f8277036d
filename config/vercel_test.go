package config

import "testing"

func TestVercelConf_Validate(t *testing.T) {
	tests := []struct {
		name string
		c    VercelConf
		ok   bool
	}{
		{"empty", VercelConf{}, true},
		{"deny all", VercelConf{Network: "deny-all"}, true},
		{"allow list", VercelConf{AllowDomains: []string{"example.com"}}, true},
		{"task kept", VercelConf{Task: "t", Persistent: true, VCPUs: 4, Ports: []int{3000}}, true},
		{"unknown network", VercelConf{Network: "none"}, false},
		{"deny all with domains", VercelConf{Network: "deny-all", AllowDomains: []string{"example.com"}}, false},
		{"negative vcpus", VercelConf{VCPUs: -1}, false},
		{"negative timeout", VercelConf{Timeout: -1}, false},
		{"sixteen ports", VercelConf{Ports: make([]int, 16)}, false},
		{"persistent without task", VercelConf{Persistent: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.c.Validate("test.yaml"); (err == nil) != tc.ok {
				t.Errorf("Validate(%+v) = %v; want ok %v", tc.c, err, tc.ok)
			}
		})
	}
}
