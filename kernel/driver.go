package kernel

import _ "embed"

// driverSource is the Python driver, passed to the interpreter with -c so
// that nothing has to be written into the environment first.
//
//go:embed driver.py
var driverSource string
