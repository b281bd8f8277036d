package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kernel"
	"github.com/runbox/runbox/service"
)

func newPool(t *testing.T, opts kernel.PoolOptions) *kernel.Pool {
	t.Helper()
	p := kernel.NewPool(opts)
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// maker makes kernels in ss's environment.
func maker(t *testing.T, ss *service.Session) func() (*kernel.Kernel, error) {
	return func() (*kernel.Kernel, error) { return ss.NewKernel(t.Context(), kernel.Options{}) }
}

func get(t *testing.T, p *kernel.Pool, owner string, make func() (*kernel.Kernel, error)) (*kernel.Kernel, bool) {
	t.Helper()
	k, made, err := p.Get(t.Context(), kernel.Key{Owner: owner}, make)
	if err != nil {
		t.Fatalf("Get(%s): %v", owner, err)
	}
	return k, made
}

// TestPool_EvictsLeastRecentlyUsed: a full pool closes the kernel used
// longest ago to make room; the others keep their state.
func TestPool_EvictsLeastRecentlyUsed(t *testing.T) {
	ss := newSession(t)
	p := newPool(t, kernel.PoolOptions{Max: 2})
	a, _ := get(t, p, "a", maker(t, ss))
	mustOK(t, a, "v = 'a'")
	b, _ := get(t, p, "b", maker(t, ss))
	mustOK(t, b, "v = 'b'")
	if again, made := get(t, p, "a", maker(t, ss)); again != a || made {
		t.Fatalf("Get(a) again made a new kernel")
	}
	get(t, p, "c", maker(t, ss))
	if p.Len() != 2 {
		t.Errorf("Len = %d; want 2", p.Len())
	}
	if _, err := b.Execute(t.Context(), "v", kernel.ExecOptions{}); !errors.Is(err, envs.ErrClosed) {
		t.Errorf("the evicted kernel: %v; want ErrClosed", err)
	}
	if r := mustOK(t, a, "v"); *r.Result != "'a'" {
		t.Errorf("a kept %v; want 'a'", *r.Result)
	}
	if _, made := get(t, p, "b", maker(t, ss)); !made {
		t.Error("b came back without being made again")
	}
}

// TestPool_NeverEvictsARunningCell: a kernel running a cell is pinned;
// a full pool of busy kernels refuses a new one until the cell ends.
func TestPool_NeverEvictsARunningCell(t *testing.T) {
	ss := newSession(t)
	p := newPool(t, kernel.PoolOptions{Max: 1})
	a, _ := get(t, p, "a", maker(t, ss))
	mustOK(t, a, "import time")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *kernel.Reply, 1)
	go func() {
		r, _ := a.Execute(ctx, "time.sleep(3600)", kernel.ExecOptions{})
		done <- r
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !a.Busy() {
		if time.Now().After(deadline) {
			t.Fatal("the cell never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, _, err := p.Get(t.Context(), kernel.Key{Owner: "b"}, maker(t, ss)); !errors.Is(err, kernel.ErrPoolFull) {
		t.Fatalf("Get(b) with a busy pool: %v; want ErrPoolFull", err)
	}
	cancel()
	if r := <-done; r == nil || !r.Interrupted || r.StateLost {
		t.Fatalf("the pinned cell: %+v; want interrupted with its state", r)
	}
	get(t, p, "b", maker(t, ss))
	if _, err := a.Execute(t.Context(), "1", kernel.ExecOptions{}); !errors.Is(err, envs.ErrClosed) {
		t.Errorf("a after its cell ended and b needed room: %v; want ErrClosed", err)
	}
}

// TestPool_IdleTimeout: a kernel that runs nothing for the idle timeout
// is closed.
func TestPool_IdleTimeout(t *testing.T) {
	ss := newSession(t)
	p := newPool(t, kernel.PoolOptions{IdleTimeout: 200 * time.Millisecond})
	a, _ := get(t, p, "a", maker(t, ss))
	mustOK(t, a, "1")
	deadline := time.Now().Add(30 * time.Second)
	for p.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle kernel was never closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := a.Execute(t.Context(), "1", kernel.ExecOptions{}); !errors.Is(err, envs.ErrClosed) {
		t.Errorf("the idle kernel: %v; want ErrClosed", err)
	}
}
