// Command kube-node is the one node of runbox's test cluster, and the
// cluster's stand-in for the scheduler and the controller manager.
//
//	kube-node run --kubeconfig F --name N --cluster ID --listen 127.0.0.1:PORT --cert C --key K --client-ca CA
//	kube-node freeports N
//	kube-node smoke --kubeconfig F --image IMAGE
//	kube-node apply --kubeconfig F FILE...
//
// run registers node N with the API server (virtual-kubelet) and runs each
// pod bound to it as docker containers, serving exec, attach and logs to the
// API server over TLS (client certificates from CA only). In the same process
// it binds every unscheduled pod to N, gives each namespace its default
// service account, finalizes deleted namespaces, and collects garbage
// (objects whose owners are gone) for Agent Sandbox's controller, which runs
// beside it (scripts/kube/controller.sh). Its docker containers carry the label
// runbox.kube.node=ID; on exit, and at start, it removes every one of them.
//
// freeports prints N free loopback TCP ports, one a line, for up.sh.
//
// smoke creates a pod, runs `true` in it through the API server's exec and
// deletes it; up.sh runs it to prove the cluster works.
//
// apply creates the CustomResourceDefinitions in FILEs and waits until they
// are served, so up.sh needs no kubectl.
//
// Source map: provider.go runs pods as docker containers and reports their
// status; exec.go serves exec, attach and logs; cluster.go is the scheduler
// and the controller-manager stand-ins; gc.go is the garbage collector;
// apply.go and smoke.go serve up.sh. What the
// node supports and what it does not is in docs/kubernetes-testing.md.
package main
