package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/runbox/runbox/envs"
)

// benchKubeCases measures the kubernetes backend against client-go's own
// pod creation and exec in the same run, on the same cluster and image
// (the kubernetes section; none configured: the rows say why). The
// baselines are what `kubectl run` + `kubectl exec` and `kubectl exec POD
// -- true` do, without kubectl's own process start, which would only
// flatter runbox.
func benchKubeCases(a *app) []benchCase {
	return []benchCase{
		{
			name: "kubernetes-create-to-first-command", backend: "kubernetes", n: 5, maxN: 20,
			baseline: "client-go: create pod, wait Running, exec true, delete (kubectl run + kubectl exec)",
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				d, err := a.svc.NewKubeDirect(envs.Spec{})
				if err != nil {
					return nil, nil, nil, err
				}
				op = func(ctx context.Context) error {
					env, _, err := a.svc.OpenKubePod(ctx, envs.Spec{})
					if err != nil {
						return err
					}
					defer env.Close(context.WithoutCancel(ctx))
					return benchTrue(ctx, env)
				}
				base = func(ctx context.Context) error {
					pod, err := d.RunPod(ctx)
					if err != nil {
						return err
					}
					defer d.Delete(context.WithoutCancel(ctx), pod)
					return d.Exec(ctx, pod, "true")
				}
				return op, base, d.Close, nil
			},
		},
		{
			name: "kubernetes-exec", backend: "kubernetes", n: 20,
			baseline: "client-go: exec true in the same pod (kubectl exec POD -- true)",
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				d, err := a.svc.NewKubeDirect(envs.Spec{})
				if err != nil {
					return nil, nil, nil, err
				}
				env, pod, err := a.svc.OpenKubePod(ctx, envs.Spec{})
				if err != nil {
					d.Close()
					return nil, nil, nil, err
				}
				op = func(ctx context.Context) error { return benchTrue(ctx, env) }
				base = func(ctx context.Context) error { return d.Exec(ctx, pod, "true") }
				return op, base, func() { env.Close(context.Background()); d.Close() }, nil
			},
		},
	}
}

// benchKubectlCases are the same two measurements against the kubectl
// program itself (`kubectl run` + `kubectl wait` + `kubectl exec` +
// `kubectl delete`, and `kubectl exec POD -- true`), process starts
// included, when a kubectl is found ($RUNBOX_KUBECTL, else on PATH).
func benchKubectlCases(a *app) []benchCase {
	kubectl := func() (string, error) {
		if p := a.getenv("RUNBOX_KUBECTL"); p != "" {
			return p, nil
		}
		p, err := exec.LookPath("kubectl")
		if err != nil {
			return "", fmt.Errorf("no kubectl for the baseline (put it on PATH or name it in RUNBOX_KUBECTL): %w", err)
		}
		return p, nil
	}
	run := func(ctx context.Context, bin string, args ...string) error {
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	return []benchCase{
		{
			name: "kubernetes-create-to-first-command.kubectl", backend: "kubernetes", n: 5, maxN: 20,
			baseline: "kubectl run, kubectl wait Ready, kubectl exec POD -- true, kubectl delete",
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				bin, err := kubectl()
				if err != nil {
					return nil, nil, nil, err
				}
				d, err := a.svc.NewKubeDirect(envs.Spec{})
				if err != nil {
					return nil, nil, nil, err
				}
				flags := slices.Clip(d.KubectlFlags()) // appends below never share its array
				op = func(ctx context.Context) error {
					env, _, err := a.svc.OpenKubePod(ctx, envs.Spec{})
					if err != nil {
						return err
					}
					defer env.Close(context.WithoutCancel(ctx))
					return benchTrue(ctx, env)
				}
				n := 0
				base = func(ctx context.Context) error {
					n++
					pod := fmt.Sprintf("runbox-bench-kubectl-%d-%d", os.Getpid(), n)
					defer run(context.WithoutCancel(ctx), bin, append(flags, "delete", "pod", pod, "--grace-period=0", "--force", "--wait=false")...)
					if err := run(ctx, bin, append(flags, "run", pod, "--image", d.Image(), "--image-pull-policy", cmp.Or(d.PullPolicy(), "IfNotPresent"), "--restart=Never", "--command", "--", "sleep", "infinity")...); err != nil {
						return err
					}
					if err := run(ctx, bin, append(flags, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=5m")...); err != nil {
						return err
					}
					return run(ctx, bin, append(flags, "exec", pod, "--", "true")...)
				}
				return op, base, d.Close, nil
			},
		},
		{
			name: "kubernetes-exec.kubectl", backend: "kubernetes", n: 20,
			baseline: "kubectl exec POD -- true in the same pod",
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				bin, err := kubectl()
				if err != nil {
					return nil, nil, nil, err
				}
				d, err := a.svc.NewKubeDirect(envs.Spec{})
				if err != nil {
					return nil, nil, nil, err
				}
				env, pod, err := a.svc.OpenKubePod(ctx, envs.Spec{})
				if err != nil {
					d.Close()
					return nil, nil, nil, err
				}
				flags := slices.Clip(d.KubectlFlags()) // appends below never share its array
				op = func(ctx context.Context) error { return benchTrue(ctx, env) }
				base = func(ctx context.Context) error { return run(ctx, bin, append(flags, "exec", pod, "--", "true")...) }
				return op, base, func() { env.Close(context.Background()); d.Close() }, nil
			},
		},
	}
}

// benchTrue runs true in env and fails unless it exits 0.
func benchTrue(ctx context.Context, env envs.Environment) error {
	res, err := env.Run(ctx, envs.Command{Args: []string{"true"}})
	if err == nil && res.Code != 0 {
		err = fmt.Errorf("true exited %d", res.Code)
	}
	return err
}
