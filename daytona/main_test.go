package daytona_test

import (
	"os"
	"testing"

	"github.com/runbox/runbox/internal/testproc"
)

// agentBin is the static runbox-agent built once by TestMain.
var agentBin string

func TestMain(m *testing.M) { os.Exit(testproc.AgentMain(m, &agentBin, testproc.IdleHTTPConns()...)) }
