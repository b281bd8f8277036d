package main

import (
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The subset of Agent Sandbox's v1beta1 API (kubernetes-sigs/agent-sandbox)
// this controller reads and writes, with the field names, label keys and
// condition reasons of the real project so that a client written for it
// works here. Objects are only ever patched, never replaced, so fields this
// subset leaves out survive.

var (
	gvrSandbox  = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}
	gvrClaim    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	gvrTemplate = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	gvrPool     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
)

const (
	labelSandboxNameHash = "agents.x-k8s.io/sandbox-name-hash"
	labelWarmPool        = "agents.x-k8s.io/warm-pool-sandbox"
	labelTemplateRefHash = "agents.x-k8s.io/sandbox-template-ref-hash"
	labelTemplateHash    = "agents.x-k8s.io/sandbox-template-hash"
	labelLaunchType      = "agents.x-k8s.io/launch-type"
	labelCreatedBy       = "agents.x-k8s.io/created-by"
	labelClaimUID        = "agents.x-k8s.io/claim-uid"
	annPodName           = "agents.x-k8s.io/pod-name"
	annTemplateRef       = "agents.x-k8s.io/sandbox-template-ref"
	annSandboxName       = "agents.x-k8s.io/sandbox-name"

	condReady        = "Ready"
	condFinished     = "Finished"
	condPodScheduled = "PodScheduled"
	condSuspended    = "Suspended"
)

type podMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type podTemplate struct {
	Spec       corev1.PodSpec `json:"spec"`
	ObjectMeta podMetadata    `json:"metadata"`
}

// blueprint is SandboxBlueprint: what a Sandbox and a SandboxTemplate share.
type blueprint struct {
	PodTemplate podTemplate `json:"podTemplate"`
	Service     *bool       `json:"service,omitempty"`
}

type sandbox struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		blueprint     `json:",inline"`
		OperatingMode string `json:"operatingMode,omitempty"`
	} `json:"spec"`
	Status sandboxStatus `json:"status,omitempty"`
}

type sandboxStatus struct {
	ServiceFQDN   string             `json:"serviceFQDN,omitempty"`
	Service       string             `json:"service,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
	LabelSelector string             `json:"selector,omitempty"`
	PodIPs        []string           `json:"podIPs,omitempty"`
	NodeName      string             `json:"nodeName,omitempty"`
}

type template struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		blueprint              `json:",inline"`
		EnvVarsInjectionPolicy string `json:"envVarsInjectionPolicy,omitempty"`
	} `json:"spec"`
}

type warmPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas    *int32 `json:"replicas,omitempty"`
		TemplateRef struct {
			Name string `json:"name"`
		} `json:"sandboxTemplateRef"`
	} `json:"spec"`
	Status warmPoolStatus `json:"status,omitempty"`
}

type warmPoolStatus struct {
	Replicas           int32  `json:"replicas,omitempty"`
	ReadyReplicas      int32  `json:"readyReplicas,omitempty"`
	Selector           string `json:"selector,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

type claim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		WarmPoolRef struct {
			Name string `json:"name"`
		} `json:"warmPoolRef"`
		AdditionalPodMetadata podMetadata `json:"additionalPodMetadata,omitempty"`
		Env                   []struct {
			Name          string `json:"name"`
			Value         string `json:"value"`
			ContainerName string `json:"containerName,omitempty"`
		} `json:"env,omitempty"`
	} `json:"spec"`
	Status claimStatus `json:"status,omitempty"`
}

type claimStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Sandbox    struct {
		Name   string   `json:"name,omitempty"`
		PodIPs []string `json:"podIPs,omitempty"`
	} `json:"sandbox,omitempty"`
}

// nameHash is the project's label value for a name: FNV-1a, 8 hex digits.
func nameHash(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	s := strconv.FormatUint(uint64(h.Sum32()), 16)
	for len(s) < 8 {
		s = "0" + s
	}
	return s
}
