// Package config loads runbox's configuration: one YAML file, then
// environment variables, then command-line flags, each overriding the one
// before (flags win).
//
// The file is looked up at --config, else $RUNBOX_CONFIG, else
// $XDG_CONFIG_HOME/runbox/config.yaml (~/.config/runbox/config.yaml when
// XDG_CONFIG_HOME is unset). A missing default file is not an error; a
// missing file that was named explicitly is. An unknown key or a value of
// the wrong type is an error that names the key, its line and the file.
//
// # Schema
//
//	backend: local            # which provider runs commands
//	timeout: 0s               # default per-command timeout; 0 = none
//	output_limit: 262144      # bytes kept of a command's output (head 40% + tail 60%)
//	spill_max: 1GiB           # bound of the file that keeps a longer output whole (0 = 1 GiB)
//	grace: 2s                 # teardown grace between SIGTERM and SIGKILL; 0 = SIGKILL at once
//	shell: ""                 # shell for shell strings; "" = bash if present, else sh
//	contain: true             # put each command in its own systemd scope / cgroup when possible
//	limits:                   # per-command defaults; 0 = no limit
//	  memory: 0               # bytes, or with a suffix: 512M, 2G
//	  pids: 0
//	  cpus: 0                 # fractional CPUs, e.g. 0.5
//	spawn:
//	  passthrough: []         # blocked variables children may inherit anyway
//	  extra_block: []         # more variables to strip unless passed through
//	  extra_strip: []         # more variables to strip always
//	approval:
//	  mode: manual            # manual | off
//	  allow: []               # globs on the command, or rule ids, that never ask
//	  deny: []                # globs or rule ids that are always refused
//	  relax_without_host_access: false  # backends without host access skip the ask tier
//	sandbox:                  # confinement of commands on this machine (docs/sandbox.md)
//	  profile: ""             # workspace | read-only | off ("" = workspace where the kernel can, else off)
//	  writable: []            # more directories commands may write
//	  deny_read: []           # more paths commands may neither read nor write
//	  git_writable: false     # let commands write .git/hooks and .git/config of an existing repository
//	  caches: private         # private (each workspace its own caches) | shared (the host's, writable)
//	  unix_sockets: []        # unix sockets outside the writable directories commands may connect to
//	  network:
//	    mode: ""              # off | allowlist | open ("" = allowlist)
//	    allow: []             # hosts reachable through the session's proxy: pypi.org, *.npmjs.org, 127.0.0.1:8080
//	    deny: []              # hosts never reachable (win over allow)
//	    ports: []             # loopback TCP ports commands may connect to directly
//	jobs:
//	  retention: 24h          # how long finished background jobs are kept
//	  max_finished: 200       # how many finished jobs are kept at most
//	tasks:
//	  max_idle: 0s            # remove tasks (--task) unused this long; 0 = keep them (docs/tasks.md)
//	docker:
//	  image: ""               # default image for the docker backend
//	  agent_binary: ""        # static runbox to copy in ("" = next to runbox, itself, or built)
//	  task: ""                # the task a persistent container is kept for
//	  persistent: false       # keep and reuse the task's container instead of removing it
//	  read_only_root: false   # read-only root filesystem (/tmp stays writable)
//	  pool: 0                 # ready containers kept per spec by runbox serve (0 = none)
//	  network: ""             # "" default bridge, none, allowlist (only through the session's
//	                          # egress proxy, hosts from sandbox.network), or a docker network
//	modal:
//	  app: runbox             # the Modal app sandboxes belong to
//	  image: ""               # registry tag or im-… id ("" = python:3.12-slim)
//	  cpu: 0                  # physical cores requested; 0 = Modal's default
//	  memory: 0               # memory requested (512M, 2G); 0 = Modal's default
//	  timeout: 0s             # sandbox lifetime (whole seconds); 0 = Modal's 5m
//	  idle_timeout: 0s        # end an idle sandbox after this; 0 = never
//	  workdir: ""             # the sandbox's working directory (absolute)
//	  block_network: false    # cut all network access
//	  cidr_allowlist: []      # allow only these ranges (not with block_network)
//	  task: ""                # the task a persistent sandbox is snapshotted for
//	  persistent: false       # snapshot on close and restore on the task's next open
//	  agent_binary: ""        # static runbox-agent to upload ("" = found or built)
//	  agent_dir: ""           # where it goes in the sandbox ("" = /.runbox)
//	sync:
//	  exclude: []             # gitignore-style patterns --sync never pushes nor brings back
//	  protected: []           # more patterns sync apply never writes (besides .git/, .env*, runbox's config)
//	  max_size: 256M          # refuse a tree (either side) above this
//	  include_git: false      # push .git/ too
//	  no_gitignore: false     # push .gitignore'd paths too
//	ssh:
//	  host: ""                # default host for the ssh backend: [user@]host[:port]
//	  user: ""                # when the host names none ("" = the local user)
//	  port: 0                 # when the host names none (0 = 22)
//	  identity_file: ""       # key offered after the ssh-agent's ("" = ~/.ssh/id_ed25519, id_ecdsa, id_rsa)
//	  ssh_config: ""          # OpenSSH client config for HostName/User/Port/IdentityFile of an alias ("" = ~/.ssh/config, none = none)
//	  known_hosts: ""         # "" = ~/.ssh/known_hosts; host keys are always checked
//	  accept_new: false       # record an unknown host's key (a changed one is always refused)
//	  agent_binary: ""        # static runbox-agent to upload ("" = next to runbox, or built)
//	  cli_binary: ""          # static runbox uploaded for job commands ("" = next to runbox, itself, or built)
//	  no_agent: false         # one session per command, without the agent (degraded)
//	  keepalive: 15s          # keepalive interval; 3 unanswered ones drop the connection
//	daytona:                  # credentials: DAYTONA_API_KEY (or DAYTONA_JWT_TOKEN +
//	                          # DAYTONA_ORGANIZATION_ID), DAYTONA_API_URL, DAYTONA_TARGET
//	  image: ""               # image a new sandbox is built from ("" = snapshot, else Daytona's default)
//	  snapshot: ""            # Daytona snapshot a new sandbox starts from
//	  cpu: 0                  # cores; 0 = Daytona's default (images only)
//	  memory: 0               # GiB; 0 = Daytona's default (images only)
//	  disk: 0                 # GiB; 0 = Daytona's default (images only)
//	  task: ""                # the task a persistent sandbox is kept for
//	  persistent: false       # find the task's sandbox by its labels, start it, stop it at close
//	  keep_running: false     # leave a persistent sandbox running at close
//	  network_allow_list: ""  # CIDRs the sandbox may reach (comma-separated); --network none blocks all
//	  agent_binary: ""        # static runbox-agent to upload ("" = next to runbox, or built)
//	  agent_dir: ""           # where in the sandbox it goes ("" = /tmp/.runbox-agent)
//	  no_agent: false         # one toolbox session per command, without the agent (degraded)
//	kubernetes:               # see docs/kubernetes.md
//	  kubeconfig: ""          # "" = KUBECONFIG, ~/.kube/config, else in-cluster
//	  context: ""             # kubeconfig context (--context)
//	  namespace: ""           # (--namespace; "" = the context's, else default)
//	  mode: ""                # plain | claim | auto ("": claim when warm_pool is set and the cluster has Agent Sandbox)
//	  warm_pool: ""           # Agent Sandbox SandboxWarmPool a claim names
//	  image: ""               # pod image; cpu, memory, runtime_class, non_root, pull_policy
//	  task: ""                # the task whose pod (or claim) is kept between runs
//	singularity:              # see docs/singularity.md
//	  program: ""             # apptainer or singularity ("" = found on PATH)
//	  image: ""               # SIF, docker://, docker-daemon: or a sandbox directory
//	  contain: containall     # containall | contain | none; writable_tmpfs, binds, network
//	  task: ""                # the task whose instance is kept between runs
//	vercel:                   # credentials: VERCEL_TOKEN (or VERCEL_OIDC_TOKEN),
//	                          # VERCEL_TEAM_ID, VERCEL_PROJECT_ID; see docs/vercel.md
//	  runtime: ""             # node22, python3.13 (--image); vcpus, timeout, ports
//	  network: ""             # allow-all (default) | deny-all; allow_domains: the domains let through
//	  task: ""                # a named, persistent sandbox kept between runs
//
// Environment variables: RUNBOX_BACKEND, RUNBOX_TIMEOUT, RUNBOX_OUTPUT_LIMIT,
// RUNBOX_GRACE, RUNBOX_SHELL, RUNBOX_CONTAIN, RUNBOX_APPROVAL_MODE,
// RUNBOX_IMAGE, RUNBOX_DOCKER_POOL, RUNBOX_MODAL_APP, RUNBOX_MODAL_IMAGE, RUNBOX_SSH_HOST,
// RUNBOX_SSH_IDENTITY, RUNBOX_DAYTONA_TASK, RUNBOX_SANDBOX.
package config
