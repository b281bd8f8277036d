// Package tests holds runbox's cross-package integration tests: they build
// the runbox binary and use it the way a user or an attacker would, as
// root and, where the machine allows it, as an unprivileged user.
package tests
