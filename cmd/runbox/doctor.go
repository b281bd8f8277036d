package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/spawn"
	"github.com/runbox/runbox/termination"
)

type doctorOptions struct {
	json bool
}

// doctorReport is what `runbox doctor --json` prints.
type doctorReport struct {
	Config      string           `json:"config"`
	Containment string           `json:"containment"`
	Providers   []providerReport `json:"providers"`
	Spawn       spawnReport      `json:"spawn"`
}

type providerReport struct {
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	Ready        bool              `json:"ready"`
	Problem      string            `json:"problem,omitempty"`
	Capabilities envs.Capabilities `json:"capabilities,omitempty"`
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
		Args:  cobra.NoArgs,
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
	for _, name := range a.providers.Names() {
		p, _ := a.providers.Lookup(name)
		pr := providerReport{Name: name, Description: p.Description, Ready: true}
		if p.Check != nil {
			if err := p.Check(ctx); err != nil {
				pr.Ready, pr.Problem = false, err.Error()
			}
		}
		if pr.Ready && p.Capabilities != nil {
			pr.Capabilities = p.Capabilities(ctx, envs.Spec{})
		}
		rep.Providers = append(rep.Providers, pr)
	}
	if res, err := spawn.Build(spawn.Request{Base: a.environ(), Policy: a.spawnPolicy()}); err == nil {
		rep.Spawn = spawnReport{Dropped: res.Dropped, Warnings: res.Warnings}
	}
	if opts.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printDoctor(a.stdout, rep)
	return nil
}

func printDoctor(w io.Writer, rep doctorReport) {
	fmt.Fprintf(w, "config:      %s\n", rep.Config)
	fmt.Fprintf(w, "containment: %s\n\n", rep.Containment)
	for _, p := range rep.Providers {
		status := "ready"
		if !p.Ready {
			status = "not ready: " + p.Problem
		}
		fmt.Fprintf(w, "%s — %s\n  %s\n", p.Name, p.Description, status)
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
