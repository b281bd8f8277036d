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
//	jobs:
//	  retention: 24h          # how long finished background jobs are kept
//	  max_finished: 200       # how many finished jobs are kept at most
//	docker:
//	  image: ""               # default image for the docker backend
//	  agent_binary: ""        # static runbox to copy in ("" = next to runbox, itself, or built)
//	  task: ""                # the task a persistent container is kept for
//	  persistent: false       # keep and reuse the task's container instead of removing it
//	  read_only_root: false   # read-only root filesystem (/tmp stays writable)
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
//
// Environment variables: RUNBOX_BACKEND, RUNBOX_TIMEOUT, RUNBOX_OUTPUT_LIMIT,
// RUNBOX_GRACE, RUNBOX_SHELL, RUNBOX_CONTAIN, RUNBOX_APPROVAL_MODE,
// RUNBOX_IMAGE, RUNBOX_DAYTONA_TASK.
package config
