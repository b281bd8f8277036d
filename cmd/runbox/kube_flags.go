package main

import (
	"github.com/spf13/pflag"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// kubeFlags are the kubernetes backend's flags: which kubeconfig context
// and which namespace (the rest comes from the kubernetes section).
type kubeFlags struct {
	context   string
	namespace string
}

func (k *kubeFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&k.context, "context", "", "kubeconfig context (kubernetes backend; default from config kubernetes.context, else the kubeconfig's current one)")
	f.StringVar(&k.namespace, "namespace", "", "namespace of the pods (kubernetes backend; default from config kubernetes.namespace, else the context's)")
}

// apply puts the flags into spec's settings.
func (k *kubeFlags) apply(spec *envs.Spec) {
	for name, v := range map[string]string{service.SettingKubeContext: k.context, service.SettingKubeNamespace: k.namespace} {
		if v == "" {
			continue
		}
		if spec.Settings == nil {
			spec.Settings = map[string]string{}
		}
		spec.Settings[name] = v
	}
}
