package config_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/runbox/runbox/config"
)

// TestSingularity_Decode: the section's keys are read from the file.
func TestSingularity_Decode(t *testing.T) {
	p := write(t, "singularity:\n  program: /opt/apptainer/bin/apptainer\n  image: /images/t.sif\n  contain: contain\n  writable_tmpfs: true\n  binds: [\"/data:/data:ro\"]\n  network: none\n  no_userns: true\n  workdir: /work\n  task: build\n")
	cfg, err := config.Load(p, envOf(nil))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	got := cfg.Singularity
	want := config.SingularityConf{Program: "/opt/apptainer/bin/apptainer", Image: "/images/t.sif", Contain: "contain",
		WritableTmpfs: true, Network: "none", NoUserNS: true, Workdir: "/work", Task: "build"}
	if !slices.Equal(got.Binds, []string{"/data:/data:ro"}) {
		t.Errorf("binds = %q", got.Binds)
	}
	got.Binds = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("singularity = %+v; want %+v", got, want)
	}
}

// TestSingularity_Validate: values the backend cannot honour are refused
// with the key's name.
func TestSingularity_Validate(t *testing.T) {
	cases := []struct {
		conf config.SingularityConf
		bad  string // a key the error names; "" for none
	}{
		{config.SingularityConf{}, ""},
		{config.SingularityConf{Contain: "containall", Network: "none"}, ""},
		{config.SingularityConf{Contain: "none"}, ""},
		{config.SingularityConf{Contain: "all"}, "singularity.contain"},
		{config.SingularityConf{Network: "bridge"}, "singularity.network"},
	}
	for _, c := range cases {
		err := c.conf.Validate("x.yaml")
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("Validate(%+v) = %v; want nil", c.conf, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("Validate(%+v) = %v; want an error naming %s", c.conf, err, c.bad)
		}
	}
}
