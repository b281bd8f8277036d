package kubernetes

import (
	"log/slog"
	"time"
)

// Mode is how a sandbox is obtained from the cluster.
type Mode string

const (
	// ModeAuto uses a SandboxClaim when Options.WarmPool is set and the
	// cluster serves the Agent Sandbox API, a plain pod otherwise.
	ModeAuto Mode = "auto"
	// ModePlain creates a plain pod from Options.Image and the limits.
	ModePlain Mode = "plain"
	// ModeClaim creates a SandboxClaim from Options.WarmPool and uses the
	// pod of the Sandbox the cluster binds to it: a ready member of the
	// pool, else one made from the pool's SandboxTemplate.
	ModeClaim Mode = "claim"
)

// DefaultImage is the pod image when Options.Image is empty.
const DefaultImage = "debian:bookworm-slim"

// DefaultReadyTimeout bounds waiting for a pod to run (or a claim to be
// bound to a running pod) when Options.ReadyTimeout is zero.
const DefaultReadyTimeout = 3 * time.Minute

// DefaultNamespace is the namespace when neither Options.Namespace nor the
// kubeconfig's context names one.
const DefaultNamespace = "default"

// NonRootUser is the uid (and gid) a pod's container runs as with
// Options.NonRoot.
const NonRootUser = 65534

// NonRootAgentDir is where the agent goes in a non-root pod: the default
// place, at the root of the filesystem, is not writable there.
const NonRootAgentDir = "/tmp/.runbox"

// Label and annotation names on what runbox creates.
const (
	// LabelManaged marks every object runbox made ("runbox").
	LabelManaged = "app.kubernetes.io/managed-by"
	// LabelOwner is who made it (the user, or RUNBOX_OWNER).
	LabelOwner = "runbox.owner"
	// LabelTask is the task a kept pod or claim belongs to; absent on an
	// environment's own (ephemeral) pod.
	LabelTask = "runbox.task"
	// LabelPod selects one pod (its network policy uses it).
	LabelPod = "runbox.pod"
	// AnnotationHolder names the runbox process that holds an ephemeral
	// pod or claim ("host/pid/start"): the reaper removes those whose
	// holder is gone.
	AnnotationHolder = "runbox.holder"
	// ContainerName is the name of the pod's one container.
	ContainerName = "sandbox"
)

// managedValue is LabelManaged's value.
const managedValue = "runbox"

// Options configures the kubernetes backend. The credentials are never
// here: they are read where kubectl reads them, and they stay on this
// machine (no token is mounted in a pod, nothing of the kubeconfig is
// passed into one).
type Options struct {
	// Kubeconfig is the kubeconfig file. Empty means as kubectl: the files
	// $KUBECONFIG lists (read through Getenv), else ~/.kube/config, else
	// the in-cluster service account.
	Kubeconfig string
	// Context is the kubeconfig context. Empty means its current context.
	Context string
	// Namespace is where pods and claims are made. Empty means the
	// context's namespace, else DefaultNamespace.
	Namespace string
	// Mode picks plain pods or Agent Sandbox claims. Empty means ModeAuto.
	Mode Mode
	// WarmPool is the SandboxWarmPool a claim names (ModeClaim, and
	// ModeAuto's claim path); the pool names the SandboxTemplate its pods
	// are made from (a pool of zero replicas gives every claim a cold
	// start). Required with ModeClaim.
	WarmPool string
	// Image is the plain pod's image. Empty means DefaultImage.
	Image string
	// PullPolicy is the container's imagePullPolicy ("Always",
	// "IfNotPresent", "Never"). Empty means IfNotPresent.
	PullPolicy string
	// RuntimeClass is the pod's runtimeClassName (gVisor, Kata). Empty
	// means the cluster's default runtime.
	RuntimeClass string
	// CPU is the pod's cpu request and limit in cores; zero means none.
	CPU float64
	// MemoryBytes is the pod's memory request and limit; zero means none.
	MemoryBytes int64
	// NonRoot runs the container as NonRootUser, with runAsNonRoot, and
	// puts the agent in NonRootAgentDir. False runs it as the image's
	// user. Either way privilege escalation is off and every capability
	// but the few the agent's tree kill needs is dropped.
	NonRoot bool
	// NetworkNone creates, with the pod, a NetworkPolicy that denies all
	// of its ingress and egress. It is enforced only where the cluster's
	// network plugin enforces NetworkPolicy.
	NetworkNone bool
	// Owner labels what is made (LabelOwner). Empty means the current
	// user.
	Owner string
	// Task keeps the pod (or claim) for the task between environments:
	// it is labelled LabelTask, found again by that label, and left
	// running at Close. Empty means a pod of this environment's own,
	// deleted at Close.
	Task string
	// Dir is the initial working directory of commands; empty means the
	// image's.
	Dir string
	// Env is laid over every command's environment. It travels with each
	// command through the agent, never in the pod's definition.
	Env map[string]string
	// AgentBinary is the static agent to copy in; empty finds or builds
	// one (remote.Agent().FindSmall).
	AgentBinary string
	// CLIBinary is the static runbox CLI put at [Env.CLIPath] before a
	// command that runs it (the job commands); empty finds or builds one.
	CLIBinary string
	// SourceDir is the runbox module's root, to build the agent or CLI
	// from; empty searches upward from the current directory.
	SourceDir string
	// AgentDir is where the agent goes in the pod. Empty means
	// remote.DefaultAgentDir, or NonRootAgentDir with NonRoot.
	AgentDir string
	// ReadyTimeout bounds waiting for a pod to run. Zero means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Getenv reads KUBECONFIG. Nil means os.Getenv.
	Getenv func(string) string
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
}
