package spawn

// Secret reports whether the policy treats name as a secret: a name on
// the always-strip or block list, whether or not Passthrough hands it to
// children. Values of such names are what [Result.CheckArgv] looks for
// and what runbox erases from its own visible environment (package
// internal/seal). An invalid policy counts every name as secret, the safe
// error.
func (p Policy) Secret(name string) bool {
	r, err := compile(p)
	if err != nil {
		return true
	}
	return r.classify(name).secret()
}
