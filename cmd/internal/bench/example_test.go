package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/runbox/runbox/cmd/internal/bench"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/service"
)

// Run takes the cases named in Only, each against its baseline in the
// same run; with JSON, one line a measurement. Times vary; the ratio
// (runbox's p50 over the baseline's) is the figure to read.
func ExampleRun() {
	svc, err := service.New(service.Options{Config: config.Default()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close(context.Background())
	var out bytes.Buffer
	h := bench.Host{Service: svc, Stdout: &out}
	if err := bench.Run(context.Background(), h, bench.Options{JSON: true, N: 1, Only: []string{"gate.check"}}); err != nil {
		fmt.Println(err)
		return
	}
	var m bench.Measurement
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (%s) against %q: ratio measured: %v\n", m.Name, m.Backend, m.Baseline, m.Ratio > 0)
	// Output: gate.check (approval) against "shell parse only": ratio measured: true
}
