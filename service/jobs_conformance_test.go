package service_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/daytona/daytonatest"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/kubernetes/kubetest"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/modal/modaltest"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/service/jobtest"
	"github.com/runbox/runbox/ssh/sshtest"
)

// The job-level conformance suite (package jobtest) on every backend
// whose sessions have background jobs. Each caller opens sessions the way
// `runbox serve --backend B` does and gives the suite the session's jobs
// where its commands run.

// TestJobs_Local: the jobs of a local session are the local job daemon's,
// which outlives every session.
func TestJobs_Local(t *testing.T) {
	t.Parallel() // the backends wait on their own sandboxes: side by side
	svc := newService(t, config.Default())
	jobtest.Run(t, jobtest.Backend{
		Open: func(t *testing.T) jobtest.Session {
			client := localJobDaemon(t)
			ss, err := svc.NewSession(service.SessionOptions{Backend: "local", Spec: envs.Spec{Dir: t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			return jobtest.Session{Session: ss, Jobs: ss.Jobs(client, service.OwnedJobsOptions{HostAccess: true})}
		},
		Processes: jobtest.HostProcesses,
		Parallel:  true,
	})
}

// supervisorCommand is the argument that makes this test binary play a
// job's supervisor, as `runbox __supervise` does (see TestMain).
const supervisorCommand = "__supervise"

// localJobDaemon is a real job registry served on a private socket, as
// runbox's per-user job daemon serves it, with this test binary as the
// jobs' supervisor. Its cleanup kills what still runs (the jobs that
// outlived their session on purpose).
func localJobDaemon(t *testing.T) *procregistry.Client {
	t.Helper()
	// A short directory: Unix socket paths are limited to ~100 bytes.
	dir, err := os.MkdirTemp("", "rbj")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env, err := local.New(local.Options{
		Confine:       confine.Off(),
		BaseEnv:       []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C", "GORACE=atexit_sleep_ms=0"},
		Grace:         local.NoGrace,
		NoContainment: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := procregistry.Open(procregistry.Options{
		Dir: filepath.Join(dir, "state"), Env: env, Supervisor: []string{exe, supervisorCommand},
		Grace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, in := range reg.List("") {
			if !in.Status.Finished() {
				reg.Kill(context.Background(), in.ID)
			}
		}
		reg.Close()
	})
	sock := filepath.Join(dir, "run", "d.sock")
	ln, err := procregistry.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { (&procregistry.Server{Reg: reg}).Serve(ctx, ln) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &procregistry.Client{Path: sock}
}

// jobsImage is the image of the docker sessions: it has setsid, which
// the suite's tree kill needs.
const jobsImage = "runbox-test-debian:bookworm"

// TestJobs_Docker: a docker session without a task runs in a container
// of its own, removed when the session ends: its jobs run in the job
// daemon inside, and its detached jobs end with the container.
func TestJobs_Docker(t *testing.T) {
	t.Parallel() // the backends wait on their own sandboxes: side by side
	svc := dockerJobsService(t)
	jobtest.Run(t, jobtest.Backend{
		Open:          sandboxSession(svc, "docker", envs.Spec{}),
		Processes:     jobtest.HostProcesses,
		ReleasedAtEnd: "a docker session without a task has a container of its own, removed when the session ends",
		Parallel:      true,
	})
}

// TestJobs_DockerTask: a docker session on a task runs in the task's
// container, which outlives the session, and so do its detached jobs.
func TestJobs_DockerTask(t *testing.T) {
	t.Parallel() // the backends wait on their own sandboxes: side by side
	svc := dockerJobsService(t)
	task := fmt.Sprintf("jobtest-%s", strings.ToLower(rand.Text()[:8]))
	t.Cleanup(func() { removeTask(task) })
	jobtest.Run(t, jobtest.Backend{
		Open:      sandboxSession(svc, "docker", envs.Spec{Settings: map[string]string{service.SettingTask: task}}),
		Processes: jobtest.HostProcesses,
	})
}

// removeTask removes the task's containers, and with them what the
// sessions left running there on purpose.
func removeTask(task string) {
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=io.runbox.task="+task).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
	}
}

// dockerJobsService is a service whose docker sessions run jobsImage; it
// skips without an engine or the image.
func dockerJobsService(t *testing.T) *service.Service {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no docker tests")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "-f", "{{.Id}}", jobsImage).CombinedOutput(); err != nil {
		integration.Skip(t, "no docker engine or no image %s (scripts/docker/build-images.sh builds it): %v: %s", jobsImage, err, strings.TrimSpace(string(out)))
	}
	warmCLI(t)
	cfg := config.Default()
	cfg.Docker.Image = jobsImage
	return newService(t, cfg)
}

// sandboxSession opens sessions of svc on backend with spec, whose jobs
// are the job daemon's in the session's own sandbox.
func sandboxSession(svc *service.Service, backend string, spec envs.Spec) func(t *testing.T) jobtest.Session {
	return func(t *testing.T) jobtest.Session {
		t.Helper()
		ss, err := svc.NewSession(service.SessionOptions{Backend: backend, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := ss.SandboxJobs(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return jobtest.Session{Session: ss, Jobs: jobs}
	}
}

// warmCLI builds the runbox CLI that the job daemon in a sandbox runs,
// before the suite: a cold build takes minutes on a loaded machine, and
// the suite's bounds are for the backend, not the compiler. Later builds
// find it up to date.
func warmCLI(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	if _, err := remote.CLI().FindSmall(ctx, runtime.GOARCH, ""); err != nil {
		t.Fatalf("building the runbox CLI for the sandboxes: %v", err)
	}
}

// TestJobs_SSH: an ssh session's jobs run in the job daemon on its host
// (an sshd in a container of its own), which outlives the session.
func TestJobs_SSH(t *testing.T) {
	t.Parallel() // the backends wait on their own sandboxes: side by side
	d := sshtest.StartContainer(t)
	warmCLI(t)
	cfg := config.Default()
	cfg.SSH.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	svc := newService(t, cfg)
	jobtest.Run(t, jobtest.Backend{
		Open: sandboxSession(svc, "ssh", envs.Spec{Host: d.Target(), Settings: map[string]string{
			"identity": d.UserKey, "accept_new_host_key": "true",
		}}),
		Processes: jobtest.HostProcesses,
	})
}

// fakeSandboxes is what a test of sessions on a loopback cloud backend
// needs (the fake Modal, the fake Daytona: sandboxes are directories of
// this machine with real processes): short directories (a job daemon's
// socket lives under a sandbox's), the agent built once, and the job
// daemons that the sandboxes' runbox CLI started stopped when the test
// ends.
type fakeSandboxes struct {
	root     string // sandboxes live in root/s
	agent    string // the static agent build
	agentDir string // where the agent and the CLI go in a sandbox
}

func newFakeSandboxes(t *testing.T) *fakeSandboxes {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds the agent and the runbox CLI")
	}
	root, err := os.MkdirTemp("", "rbf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	f := &fakeSandboxes{root: root, agent: filepath.Join(root, "runbox-agent"), agentDir: filepath.Join(root, "a")}
	if err := testproc.BuildAgent(f.agent); err != nil {
		t.Fatal(err)
	}
	warmCLI(t)
	// Registered before the fake and the service, so it runs after them.
	t.Cleanup(func() {
		clis, _ := filepath.Glob(filepath.Join(f.agentDir, "runbox-*"))
		for _, c := range clis {
			testproc.StopDaemons(c)
		}
	})
	return f
}

// modal is a service whose modal backend is the fake Modal (through the
// official SDK), with cfg's modal section but the agent's. It sets the
// process environment (the SDK reads its server from there too): the
// caller must not be parallel.
func (f *fakeSandboxes) modal(t *testing.T, cfg config.Config) *service.Service {
	t.Helper()
	const id, secret = "ak-jobtest", "as-jobtest-4f5e6d7c"
	fm, err := modaltest.Start(modaltest.Config{TokenID: id, TokenSecret: secret, Dir: filepath.Join(f.root, "s")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fm.Stop)
	none := filepath.Join(f.root, "none.toml")
	t.Setenv("MODAL_SERVER_URL", fm.URL())
	t.Setenv("MODAL_CONFIG_PATH", none)
	cfg.Modal.AgentBinary, cfg.Modal.AgentDir = f.agent, f.agentDir
	launch := map[string]string{"MODAL_TOKEN_ID": id, "MODAL_TOKEN_SECRET": secret, "MODAL_SERVER_URL": fm.URL(), "MODAL_CONFIG_PATH": none}
	return newServiceWith(t, service.Options{Config: cfg, Getenv: func(k string) string { return launch[k] }})
}

// TestJobs_Modal: a modal session's jobs run in the job daemon inside its
// sandbox (the fake Modal, through the official SDK), which is terminated
// when the session ends.
func TestJobs_Modal(t *testing.T) {
	// Not parallel: the SDK reads its server from the process environment.
	svc := newFakeSandboxes(t).modal(t, config.Default())
	jobtest.Run(t, jobtest.Backend{
		Open:          sandboxSession(svc, "modal", envs.Spec{}),
		Processes:     jobtest.HostProcesses,
		ReleasedAtEnd: "a modal session's sandbox is terminated when the session ends",
	})
}

// daytona is a service with opts whose daytona backend is the fake
// Daytona (through the official SDK), and that fake.
func (f *fakeSandboxes) daytona(t *testing.T, opts service.Options) (*service.Service, *daytonatest.Server) {
	t.Helper()
	const key = "dtn-jobtest-key-8e1f"
	fd := daytonatest.New(key, filepath.Join(f.root, "s"))
	t.Cleanup(fd.Close)
	opts.Config = config.Default()
	opts.Config.Daytona.AgentBinary, opts.Config.Daytona.AgentDir = f.agent, f.agentDir
	launch := map[string]string{"DAYTONA_API_KEY": key, "DAYTONA_API_URL": fd.APIURL}
	opts.Getenv = func(k string) string { return launch[k] }
	return newServiceWith(t, opts), fd
}

// TestJobs_Daytona: a daytona session's jobs run in the job daemon inside
// its sandbox (the fake Daytona, through the official SDK; the agent over
// a toolbox PTY session), which is deleted when the session ends.
func TestJobs_Daytona(t *testing.T) {
	t.Parallel() // the backends wait on their own sandboxes: side by side
	svc, _ := newFakeSandboxes(t).daytona(t, service.Options{})
	jobtest.Run(t, jobtest.Backend{
		Open:          sandboxSession(svc, "daytona", envs.Spec{}),
		Processes:     jobtest.HostProcesses,
		ReleasedAtEnd: "a daytona session's sandbox (no task) is deleted when the session ends",
		Parallel:      true,
	})
}

// TestJobs_Kubernetes: a kubernetes session's jobs run in the job daemon
// inside its own pod (the test cluster of scripts/kube, whose node runs
// pods as docker containers of this machine), deleted when the session
// ends.
func TestJobs_Kubernetes(t *testing.T) {
	t.Parallel() // the backends wait on their own sandboxes: side by side
	if testing.Short() {
		t.Skip("-short: no cluster tests")
	}
	kc, _ := kubetest.Cluster(t)
	warmCLI(t)
	agentBin := filepath.Join(t.TempDir(), "runbox-agent")
	if err := testproc.BuildAgent(agentBin); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Kubernetes = config.KubernetesConf{Kubeconfig: kc, Image: jobsImage, PullPolicy: "Never", AgentBinary: agentBin}
	svc := newService(t, cfg)
	jobtest.Run(t, jobtest.Backend{
		Open:          sandboxSession(svc, "kubernetes", envs.Spec{}),
		Processes:     jobtest.HostProcesses,
		ReleasedAtEnd: "a kubernetes session without a task has a pod of its own, deleted when the session ends",
	})
}
