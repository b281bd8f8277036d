//go:build !linux

package seal

import (
	"errors"
	"os"
)

var errNotLinux = errors.New("only supported on Linux")

func erase(names, values []string) error { return errNotLinux }

func nonDumpable() error { return errNotLinux }

func hideArgs([]envArg) error { return errNotLinux }

func sealedFile(data []byte) (*os.File, error) { return nil, errNotLinux }
