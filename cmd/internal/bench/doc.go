// Package bench is `runbox bench`: it measures what runbox costs, each
// measurement against a baseline that does the same work without runbox,
// taken in the same run.
//
// # Cases
//
// A case is one row of the case table (allCases): a name users give to
// --only ("true", "gate.check", "docker-exec-true", ...), the backend it
// measures, a description of its baseline, and how many runs it takes
// by default. Most cases are an operation and its baseline, made by the
// case's setup: for `true` on the local backend, the operation runs
// `true` through runbox and the baseline is `bash -c true`. [Run] times
// both n times, after one warm-up each, and prints the p50 and p99 of
// the operation, the p50 of the baseline and their ratio, which is the
// figure to read: below 1 runbox beat its baseline. A case whose
// measurement does not fit that loop (a throughput, the memory of idle
// jobs, a container whose start is measured with the engine's other
// work settled first) has a custom function that returns its
// [Measurement] itself.
//
// # The baseline is measured in the same run
//
// A figure on its own says little on a machine whose load drifts; a
// ratio to a baseline taken in the same minutes, on the same machine,
// says how much of the time is runbox's. So the two sides alternate
// (in runs of ten back to back, or pair by pair where a run takes
// seconds), and neither takes its cold start alone. Times are not
// rounded: the gate's are a few microseconds.
//
// # What it needs, and what it leaves
//
// A front end gives [Run] a [Host]: the [service.Service] that opens
// what is measured and holds the configuration, a way to open a job
// registry as its job daemon does, and where to print. A case that
// cannot be measured here (no Docker engine, no ssh host, no cluster,
// no node for the reference MCP server, no python3 for the regex table)
// is printed with a note saying why, never dropped; only the end of the
// run's context stops [Run], which then returns at once. Every exit
// removes what the run made: jobs and their state directories,
// containers (found by a label naming the run, even those a cut-short
// `docker run` made), a ControlMaster.
//
// Four cases run the executable they are in as runbox (gate.check.jsonl
// and gate.check.regex run `check --jsonl`, mcp.terminal runs `serve`, ssh.oneshot runs
// `run`), so [Run] belongs in the runbox program; elsewhere those cases
// report what failed.
//
// This package names backends, which the rest of runbox's core does not
// (it asks the provider table what a backend can do): a measurement is
// of one backend, and some open it below the provider table (a container
// made and removed per command, a warm pool waited on, a local
// environment without pre-started shells). Only cmd/runbox imports it.
//
// # Adding a measurement
//
//  1. Write its case in the file of its backend or subject (local.go,
//     docker.go, gate.go, ...), next to the others of its kind: a name
//     that says what is measured, the backend, a baseline described as
//     a user would type it, n (and maxN when one run is expensive), and a
//     setup that returns the operation, the baseline and a cleanup that
//     runs however the measurement ends. Use custom only when the timed
//     loop cannot express it, and stop it when ctx ends.
//  2. Add its group to allCases if it is a new one; the order of the
//     table is the order of a run and of --only's list of valid names.
//  3. Measure the baseline doing the same work by the plainest means a
//     user has (the shell, the docker or ssh client, kubectl, client-go),
//     never a slowed one: the ratio is only as honest as the baseline.
//  4. Test it through `runbox bench --only NAME --json` in cmd/runbox
//     when it needs the runbox program or a service, or here when it
//     does not, and record its figures in docs/benchmarks.md.
package bench
