package local

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
)

// TestEnv_GetFileRefusesFifo: a fifo a command left where a file was is
// refused at once, not waited on; a file still reads.
func TestEnv_GetFileRefusesFifo(t *testing.T) {
	dir := t.TempDir()
	e, err := New(Options{Confine: confine.Off(), Dir: dir, NoPrestart: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	if res, err := e.Run(t.Context(), envs.Command{Shell: "mkfifo pipe && echo x > file"}); err != nil || res.Code != 0 {
		t.Fatalf("setup: %v %+v", err, res)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.GetFile(t.Context(), "pipe")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "fifo") {
			t.Errorf("GetFile(fifo) = %v; want a refusal naming it", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("GetFile waited on a fifo")
	}
	rc, err := e.GetFile(t.Context(), "file")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "x\n" {
		t.Errorf("GetFile(file) read %q", b)
	}
}
