package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/spawn"
	"github.com/runbox/runbox/termination"
)

type doctorOptions struct {
	json bool
}

// doctorReport is what `runbox doctor --json` prints.
type doctorReport struct {
	Config      string           `json:"config"`
	ConfigError string           `json:"config_error,omitempty"` // the file is broken; the report uses the defaults
	Containment string           `json:"containment"`
	Sandbox     sandboxReport    `json:"sandbox"`
	Providers   []providerReport `json:"providers"`
	Spawn       spawnReport      `json:"spawn"`
}

type providerReport struct {
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	Ready        bool              `json:"ready"`
	Problem      string            `json:"problem,omitempty"`
	Capabilities envs.Capabilities `json:"capabilities,omitempty"`
	// Provisioning says how the backend gets its sandboxes, where that
	// depends on the far side (envs.Provider.Provisioning).
	Provisioning string `json:"provisioning,omitempty"`
}

// sandboxReport is the confinement local commands get: the profile in
// force, what it could not be (when the kernel refuses a profile named
// by the user), and each kernel layer's state.
type sandboxReport struct {
	Profile     string          `json:"profile"`
	Policy      string          `json:"policy"`
	Problem     string          `json:"problem,omitempty"`
	LandlockABI int             `json:"landlock_abi"`
	Layers      []confine.Layer `json:"layers"`
}

type spawnReport struct {
	Dropped  []spawn.Drop `json:"dropped"`
	Warnings []string     `json:"warnings,omitempty"`
}

func newDoctorCommand(a *app) *cobra.Command {
	var opts doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show every backend, whether it can run here, and what it enforces",
		Long: `Show every backend, whether it can run here, and what it enforces, the
containment mechanism in use and what the child environment withholds.

A configuration file that cannot be read is reported on the first line, the
rest of the report uses the defaults, and doctor exits 125 at the end.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotateConfig: configReported},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), a, &opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON")
	return cmd
}

func runDoctor(ctx context.Context, a *app, opts *doctorOptions) error {
	rep := doctorReport{Config: a.cfg.Path, Containment: termination.Detect(ctx).String()}
	if rep.Config == "" {
		rep.Config = "(none; defaults)"
	}
	if a.cfgErr != nil {
		rep.Config = "broken"
		rep.ConfigError = strings.TrimPrefix(strings.TrimPrefix(service.Message(a.cfgErr), "runbox: "), "config: ")
	}
	rep.Sandbox = sandboxStatus(a)
	for _, name := range a.providers.Names() {
		p, _ := a.providers.Lookup(name)
		pr := providerReport{Name: name, Description: p.Description, Ready: true}
		if p.Check != nil {
			if err := p.Check(ctx); err != nil {
				pr.Ready, pr.Problem = false, service.StripInternal(err.Error())
			}
		}
		if err := a.svc.SpecProblem(name, envs.Spec{}); err != nil && pr.Ready {
			// Installed but not usable as configured (docker without an
			// image): ready would be a promise the first command breaks.
			pr.Ready, pr.Problem = false, strings.TrimPrefix(err.Error(), "service: ")
		}
		if pr.Ready && p.Capabilities != nil {
			pr.Capabilities = userCapabilities(p.Capabilities(ctx, envs.Spec{}))
		}
		if pr.Ready && p.Provisioning != nil {
			pr.Provisioning = p.Provisioning(ctx)
		}
		rep.Providers = append(rep.Providers, pr)
	}
	if res, err := spawn.Build(spawn.Request{Base: a.environ(), Policy: a.svc.SpawnPolicy()}); err == nil {
		rep.Spawn = spawnReport{Dropped: res.Dropped, Warnings: res.Warnings}
	}
	if opts.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printDoctor(a.stdout, rep)
	}
	if a.cfgErr != nil {
		// Reported above, in the report itself; the status says so too.
		return quietError{a.cfgErr}
	}
	return nil
}

// sandboxStatus probes the kernel and says which profile local commands
// started here would get.
func sandboxStatus(a *app) sandboxReport {
	probe := confine.Probe()
	rep := sandboxReport{LandlockABI: probe.LandlockABI, Layers: probe.Layers}
	pol, err := a.svc.SandboxPolicy(envs.Spec{})
	if err != nil {
		rep.Profile, rep.Problem = "refused", service.StripInternal(err.Error())
		return rep
	}
	rep.Profile, rep.Policy = pol.Profile, service.DescribePolicy(pol)
	return rep
}

// userAdvice rewrites the Go package names that backends' capability
// details may point to into what a user of the CLI would reach for.
var userAdvice = strings.NewReplacer(
	"procregistry", "background jobs (runbox start)",
)

// userCapabilities is caps with details a CLI user can act on.
func userCapabilities(caps envs.Capabilities) envs.Capabilities {
	out := make(envs.Capabilities, len(caps))
	for c, info := range caps {
		info.Detail = userAdvice.Replace(service.StripInternal(info.Detail))
		out[c] = info
	}
	return out
}

func printDoctor(w io.Writer, rep doctorReport) {
	if rep.ConfigError != "" {
		fmt.Fprintf(w, "config:      broken: %s\n", rep.ConfigError)
		fmt.Fprintf(w, "             (fix it or point --config elsewhere; below are the defaults)\n")
	} else {
		fmt.Fprintf(w, "config:      %s\n", rep.Config)
	}
	fmt.Fprintf(w, "containment: %s\n", rep.Containment)
	printSandbox(w, rep.Sandbox)
	for _, p := range rep.Providers {
		status := "ready"
		if !p.Ready {
			status = "not ready: " + p.Problem
		}
		fmt.Fprintf(w, "%s — %s\n  %s\n", p.Name, p.Description, status)
		if p.Provisioning != "" {
			fmt.Fprintf(w, "  provisioning: %s\n", p.Provisioning)
		}
		for _, c := range envs.AllCapabilities {
			if info, ok := p.Capabilities[c]; ok || p.Ready {
				line := fmt.Sprintf("  %-16s %s", c, info.State)
				if info.Detail != "" {
					line += " (" + info.Detail + ")"
				}
				fmt.Fprintln(w, line)
			}
		}
		fmt.Fprintln(w)
	}
	names := make([]string, 0, len(rep.Spawn.Dropped))
	for _, d := range rep.Spawn.Dropped {
		names = append(names, d.Name)
	}
	if len(names) == 0 {
		names = []string{"(none)"}
	}
	fmt.Fprintf(w, "child environment: withheld from commands: %s\n", strings.Join(names, ", "))
	for _, warn := range rep.Spawn.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}

func printSandbox(w io.Writer, s sandboxReport) {
	switch {
	case s.Problem != "":
		fmt.Fprintf(w, "sandbox:     refused: %s\n", s.Problem)
	default:
		fmt.Fprintf(w, "sandbox:     %s\n", s.Policy)
	}
	fmt.Fprintf(w, "  landlock ABI %d\n", s.LandlockABI)
	for _, l := range s.Layers {
		line := fmt.Sprintf("  %-16s %s", l.Name, l.State)
		if l.Reason != "" {
			line += " (" + l.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
}
