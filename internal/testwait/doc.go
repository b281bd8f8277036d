// Package testwait is the one way runbox's tests wait for a condition
// that nothing announces: a process gone from /proc, a cgroup removed, a
// line reaching a log another process writes. Where a channel, an exit
// or a fake clock can say that something happened, tests wait on that
// instead; this package is for the rest.
//
// The bounds only turn a hang into a failure. Tests run on busy CI
// machines, so the default bound ([Bound]) is minutes, not seconds: a
// slow machine must never fail a test that would pass on an idle one.
// The conditions are polled every [Interval]; a test that wants a
// condition to hold quickly asserts that separately, with its own clock.
//
// A wait does not watch the test's context: that is done once cleanups
// start, and a cleanup may itself need to wait (for a process to go).
package testwait
