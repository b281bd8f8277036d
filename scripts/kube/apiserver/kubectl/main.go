// Command kubectl is Kubernetes' kubectl, built from the same pinned modules
// as the test cluster's API server, for the benchmarks' baselines and for
// looking into the cluster by hand.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// The verbosity is read before the command is built, as upstream does,
	// so that building it (plugins, .kuberc) logs at the asked level.
	_, _ = logs.GlogSetter(cmd.GetLogVerbosity(os.Args))
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
