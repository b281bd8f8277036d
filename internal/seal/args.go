package seal

// HideEnvArgs overwrites with '*', in this process's own memory, the
// value of each "NAME=VALUE" argument (and "--env=NAME=VALUE") for the
// pairs in vars: the bytes the kernel shows as /proc/PID/cmdline, which
// every user of the machine may read. Other arguments are left alone,
// even where they contain a value (a short value is an ordinary word in
// a command text). Call it once the arguments were parsed into copies:
// after [Process], os.Args no longer points at that memory. It fails off
// Linux, or when /proc/self/mem cannot be written.
//
// The values are visible from the exec until this call; a caller that
// can take them from its environment instead keeps them off the command
// line entirely.
func HideEnvArgs(vars map[string]string) error {
	var forms []envArg
	for k, v := range vars {
		if v == "" {
			continue
		}
		forms = append(forms, envArg{k + "=" + v, len(k) + 1}, envArg{"--env=" + k + "=" + v, len("--env=") + len(k) + 1})
	}
	if len(forms) == 0 {
		return nil
	}
	return hideArgs(forms)
}

// envArg is one whole argument to blank from offset value on.
type envArg struct {
	arg   string
	value int
}

// blankArgs overwrites, in each NUL-terminated argument of b equal to
// one of forms, the bytes from the form's value offset on.
func blankArgs(b []byte, forms []envArg) {
	for off := 0; off < len(b); {
		n := 0
		for off+n < len(b) && b[off+n] != 0 {
			n++
		}
		arg := b[off : off+n]
		for _, f := range forms {
			if string(arg) == f.arg {
				for j := f.value; j < len(arg); j++ {
					arg[j] = '*'
				}
				break
			}
		}
		off += n + 1
	}
}
