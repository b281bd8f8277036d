package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kubernetes"
)

// kubeBaseline is one way to do without runbox what the kubernetes rows
// measure: a pod made, waited for, given `true` and deleted; and `true`
// in a pod that runs.
type kubeBaseline struct {
	suffix               string // of the rows' names
	createDesc, execDesc string
	// prepare finds what the baseline needs (nil: nothing).
	prepare func() error
	create  func(ctx context.Context, d *kubernetes.Direct) error
	exec    func(ctx context.Context, d *kubernetes.Direct, pod string) error
}

// kubeCases measure the kubernetes backend, on the same cluster and
// image (the kubernetes section; none configured: the rows say why),
// against two baselines in the same run: client-go's own calls in this
// process (what `kubectl run` + `kubectl exec` do, without a process
// start that would only flatter runbox), and the kubectl program itself
// when one is found ($RUNBOX_KUBECTL, else on PATH: the ".kubectl" rows).
func kubeCases(h Host) []caseDef {
	var cases []caseDef
	for _, b := range []kubeBaseline{clientGoBaseline(), kubectlBaseline(h)} {
		cases = append(cases, kubeRows(h, b)...)
	}
	return cases
}

// kubeRows are the two kubernetes rows against baseline b.
func kubeRows(h Host, b kubeBaseline) []caseDef {
	direct := func() (*kubernetes.Direct, error) {
		if b.prepare != nil {
			if err := b.prepare(); err != nil {
				return nil, err
			}
		}
		// Connected as the kubernetes backend would be for the same spec.
		return kubernetes.NewDirect(h.Service.KubernetesOptions(envs.Spec{}))
	}
	return []caseDef{
		{
			name: "kubernetes-create-to-first-command" + b.suffix, backend: "kubernetes", n: 5, maxN: 20,
			baseline: b.createDesc,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				d, err := direct()
				if err != nil {
					return nil, nil, nil, err
				}
				op = func(ctx context.Context) error {
					env, _, err := openKubePod(ctx, h, envs.Spec{})
					if err != nil {
						return err
					}
					defer env.Close(context.WithoutCancel(ctx))
					return runTrue(ctx, env)
				}
				base = func(ctx context.Context) error { return b.create(ctx, d) }
				return op, base, d.Close, nil
			},
		},
		{
			name: "kubernetes-exec" + b.suffix, backend: "kubernetes", n: 20,
			baseline: b.execDesc,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				d, err := direct()
				if err != nil {
					return nil, nil, nil, err
				}
				env, pod, err := openKubePod(ctx, h, envs.Spec{})
				if err != nil {
					d.Close()
					return nil, nil, nil, err
				}
				base = func(ctx context.Context) error { return b.exec(ctx, d, pod) }
				return trueIn(env), base, func() { env.Close(context.Background()); d.Close() }, nil
			},
		},
	}
}

// openKubePod opens the kubernetes backend for spec through the provider
// table, as a session would, and returns it with its pod's name (which
// the baselines exec in).
func openKubePod(ctx context.Context, h Host, spec envs.Spec) (envs.Environment, string, error) {
	env, err := h.Service.Providers().Open(ctx, "kubernetes", spec)
	if err != nil {
		return nil, "", err
	}
	k, ok := env.(*kubernetes.Env)
	if !ok {
		env.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("bench: the kubernetes row opened a %T", env)
	}
	return env, k.PodName(), nil
}

// clientGoBaseline is client-go's own calls, in this process.
func clientGoBaseline() kubeBaseline {
	return kubeBaseline{
		createDesc: "client-go: create pod, wait Running, exec true, delete (kubectl run + kubectl exec)",
		execDesc:   "client-go: exec true in the same pod (kubectl exec POD -- true)",
		create: func(ctx context.Context, d *kubernetes.Direct) error {
			pod, err := d.RunPod(ctx)
			if err != nil {
				return err
			}
			defer d.Delete(context.WithoutCancel(ctx), pod)
			return d.Exec(ctx, pod, "true")
		},
		exec: func(ctx context.Context, d *kubernetes.Direct, pod string) error { return d.Exec(ctx, pod, "true") },
	}
}

// kubectlBaseline is the kubectl program, process starts included.
func kubectlBaseline(h Host) kubeBaseline {
	var bin string
	run := func(ctx context.Context, d *kubernetes.Direct, args ...string) error {
		args = append(slices.Clip(d.KubectlFlags()), args...)
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	n := 0
	return kubeBaseline{
		suffix:     ".kubectl",
		createDesc: "kubectl run, kubectl wait Ready, kubectl exec POD -- true, kubectl delete",
		execDesc:   "kubectl exec POD -- true in the same pod",
		prepare: func() error {
			if bin = h.Service.Getenv("RUNBOX_KUBECTL"); bin != "" {
				return nil
			}
			var err error
			if bin, err = exec.LookPath("kubectl"); err != nil {
				return fmt.Errorf("no kubectl for the baseline (put it on PATH or name it in RUNBOX_KUBECTL): %w", err)
			}
			return nil
		},
		create: func(ctx context.Context, d *kubernetes.Direct) error {
			n++
			pod := fmt.Sprintf("runbox-bench-kubectl-%d-%d", os.Getpid(), n)
			defer run(context.WithoutCancel(ctx), d, "delete", "pod", pod, "--grace-period=0", "--force", "--wait=false")
			if err := run(ctx, d, "run", pod, "--image", d.Image(), "--image-pull-policy", cmp.Or(d.PullPolicy(), "IfNotPresent"), "--restart=Never", "--command", "--", "sleep", "infinity"); err != nil {
				return err
			}
			if err := run(ctx, d, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=5m"); err != nil {
				return err
			}
			return run(ctx, d, "exec", pod, "--", "true")
		},
		exec: func(ctx context.Context, d *kubernetes.Direct, pod string) error {
			return run(ctx, d, "exec", pod, "--", "true")
		},
	}
}
