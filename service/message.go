package service

import (
	"errors"
	"regexp"
	"strings"

	"github.com/runbox/runbox/envs"
)

// internalPrefix matches the package names that errors from runbox's
// packages carry ("envs: ", "local: ", ...): useful in a log, noise to a
// person, who never typed them. Names a user knows ("config", "docker")
// are kept.
var internalPrefix = regexp.MustCompile(`(^|: )(?:envs|local|procregistry|supervisor|approval|termination|spawn|gated|agent): `)

// Message is how err reads to a person: "runbox: " and the message,
// without internal package prefixes. Only the text changes; err itself is
// passed on untouched, so errors.Is and errors.As still see every wrapped
// error. Every front end prints errors through it.
func Message(err error) string {
	msg := err.Error()
	var de *envs.DirError
	if errors.As(err, &de) {
		msg = de.Error() // the rest ("open local: ...") adds nothing
	}
	msg = StripInternal(msg)
	msg = strings.TrimPrefix(msg, "runbox: ")
	if strings.HasPrefix(msg, "runbox ") { // starts with a command path
		return msg
	}
	return "runbox: " + msg
}

// StripInternal removes internal package prefixes from a message.
func StripInternal(msg string) string {
	for {
		m := internalPrefix.ReplaceAllString(msg, "$1")
		if m == msg {
			return m
		}
		msg = m
	}
}
