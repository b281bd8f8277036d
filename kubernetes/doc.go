// Package kubernetes is the kubernetes backend: a pod per environment (or
// per task) on the user's cluster, driven through client-go (pinned at
// v0.37.2), with the runbox agent running inside it.
//
// # How commands run
//
// The backend is a [remote.Sandbox] for the agent host (package
// agent/remote). Provision gets a running pod; CopyIn writes the static
// agent with one exec of sh that reads its stdin (a file of the right
// size already there is kept: its name carries its digest); Attach starts
// `<agent> agent` with one long-lived exec whose stdin and stdout carry
// the agent protocol. Every command is then one round trip on that
// stream, with session state, PTY, stdin, signals, tree kill inside the
// pod and file transfer — the same contract as the docker backend, not
// one exec per command. Execs go over websockets (remotecommand's
// websocket executor, the protocol of API servers since v1.30) and fall
// back to SPDY when the upgrade fails, as kubectl exec does.
//
// # Two ways to get a pod
//
//   - Plain ([ModePlain]): a pod of Options.Image whose one container
//     idles (`sh -c 'trap … TERM; while :; do sleep 3600 & wait; done'`),
//     with the cpu and memory as both requests and limits,
//     runtimeClassName when given (gVisor, Kata), labels
//     app.kubernetes.io/managed-by=runbox, runbox.owner and (for a task)
//     runbox.task, no service-account token and no service links,
//     privilege escalation off and all capabilities but six dropped, a
//     non-root uid with Options.NonRoot, and with Options.NetworkNone a
//     NetworkPolicy that denies all its ingress and egress (which only a
//     network plugin that enforces NetworkPolicy enforces: capabilities
//     report it degraded). New waits until the pod runs, failing at once
//     on an image that cannot be had.
//   - Claimed ([ModeClaim]): where the cluster serves the Agent Sandbox
//     API (kubernetes-sigs/agent-sandbox, v1beta1), a SandboxClaim from
//     Options.WarmPool; the cluster binds it to a ready Sandbox of the
//     pool (or makes one from the pool's SandboxTemplate) and runbox runs
//     in that Sandbox's pod. The runbox labels go on the claim; the pod
//     gets them as annotations through the claim's additionalPodMetadata
//     (the controller refuses labels outside the domains its operator
//     allows). A claim the controller refuses (its Ready reason says the
//     claim can never be bound as it is) fails New at once.
//
// [ModeAuto] claims when a warm pool is named and the API is served,
// else makes a plain pod. [AgentSandbox] says whether a cluster serves it
// (runbox doctor reports it).
//
// # Loss and recreation
//
// A pod deleted, evicted or ended while a command runs ends the exec
// stream, so the command fails at once with an error that says what
// became of the pod: "pod ns/name is gone (deleted)", "… was evicted: …", "… has
// ended (phase Failed, …)", or, for a claim's pod that its Sandbox made
// again under the same name, "… was deleted and made again by its
// controller". The next command provisions again — a new pod (the ended
// one is deleted; for a claim, the pod its Sandbox made again when that
// one runs already, else a new claim), or the task's — and its Result
// says EnvironmentRecreated. Nothing is retried.
//
// # Tasks, release and the reaper
//
// With Options.Task the pod (or claim) is labelled runbox.task, found
// again by that label (and its owner's), and left running at Close, so
// the task's next environment runs in the same pod with its files.
// Without one, Close deletes the pod with grace period 0 (a claim: the
// claim, whose Sandbox and pod go with it), and the pod carries the
// runbox.holder annotation (host, pid and start time of the runbox
// process). [Reap] deletes an owner's ephemeral pods and claims whose
// holder process on this host is gone (runbox serve runs it at start).
// [Tasks] and [RemoveTask] list and delete the owner's task pods and
// claims (runbox tasks).
//
// # Credentials
//
// The kubeconfig is read as kubectl reads it: Options.Kubeconfig, else
// the files $KUBECONFIG lists (read through Options.Getenv), else
// ~/.kube/config, else the in-cluster service account; Options.Context
// and Options.Namespace override the context's. The credentials stay in
// this process: the pod gets no token (automountServiceAccountToken
// false), nothing of the kubeconfig is copied in, and a command's
// environment (Options.Env, where a caller's secrets go) travels with
// each command through the agent, never in the pod's definition.
//
// # Logging
//
// client-go logs through klog, process-wide, to standard error (for
// example about an exec stream runbox closes on purpose). The first
// connection routes klog to a discarding logger, once per process;
// runbox's own errors say what went wrong.
//
// # What it does not do
//
// It has no native-exec fallback: an image where the agent cannot run
// (not linux, no sh to copy it in with) fails with the reason. It does
// not pull, build or push images, and it does not make the warm pools
// or templates a claim names: those are the cluster's.
package kubernetes
