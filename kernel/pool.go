package kernel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runbox/runbox/envs"
)

// Defaults of [PoolOptions] fields left zero.
const (
	DefaultMaxKernels  = 4
	DefaultIdleTimeout = 30 * time.Minute
)

// ErrPoolFull is returned when every kernel of a full pool is running a
// cell, so none can be evicted to make room.
var ErrPoolFull = errors.New("kernel: every kernel is running a cell")

// Key names a kernel in a [Pool]: whose it is, which interpreter, where.
type Key struct {
	Owner  string
	Python string
	Dir    string
}

// PoolOptions configure a [Pool].
type PoolOptions struct {
	// Max caps the live kernels. Zero means [DefaultMaxKernels]; negative
	// means no cap.
	Max int
	// IdleTimeout closes a kernel that has run no cell for this long.
	// Zero means [DefaultIdleTimeout]; negative means never.
	IdleTimeout time.Duration
}

// Pool keeps kernels by [Key], at most Max of them: making one more closes
// the least recently used kernel that is not running a cell (never one
// that is). Kernels idle longer than IdleTimeout are closed. Close the
// Pool to close them all and stop its janitor.
type Pool struct {
	opts PoolOptions

	mu      sync.Mutex
	closed  bool
	kernels map[Key]*pooled

	stop chan struct{}
	wg   sync.WaitGroup
}

type pooled struct {
	k    *Kernel
	used time.Time
}

// NewPool returns an empty pool and starts its idle janitor.
func NewPool(opts PoolOptions) *Pool {
	o := opts
	if o.Max == 0 {
		o.Max = DefaultMaxKernels
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	p := &Pool{opts: o, kernels: map[Key]*pooled{}, stop: make(chan struct{})}
	if o.IdleTimeout > 0 {
		p.wg.Go(p.janitor)
	}
	return p
}

// Get returns the kernel under key, making it with make when there is
// none (made is then true). A kernel closed by eviction or idleness is
// simply made again: the caller learns from made that its state is gone.
func (p *Pool) Get(ctx context.Context, key Key, make func() (*Kernel, error)) (k *Kernel, made bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, fmt.Errorf("kernel: pool: %w", envs.ErrClosed)
	}
	if e := p.kernels[key]; e != nil {
		e.used = time.Now()
		p.mu.Unlock()
		return e.k, false, nil
	}
	var victim *Kernel
	if p.opts.Max > 0 && len(p.kernels) >= p.opts.Max {
		vk, ok := p.lruIdle()
		if !ok {
			p.mu.Unlock()
			return nil, false, fmt.Errorf("%w: all %d are busy (the cap is %d)", ErrPoolFull, len(p.kernels), p.opts.Max)
		}
		victim = p.kernels[vk].k
		delete(p.kernels, vk)
	}
	p.mu.Unlock()
	if victim != nil {
		victim.Close(context.WithoutCancel(ctx))
	}
	k, err = make()
	if err != nil {
		return nil, false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		k.Close(context.WithoutCancel(ctx))
		return nil, false, fmt.Errorf("kernel: pool: %w", envs.ErrClosed)
	}
	if e := p.kernels[key]; e != nil { // made meanwhile by another caller
		k.Close(context.WithoutCancel(ctx))
		e.used = time.Now()
		return e.k, false, nil
	}
	p.kernels[key] = &pooled{k: k, used: time.Now()}
	return k, true, nil
}

// lruIdle is the least recently used kernel not running a cell. Called
// with mu held.
func (p *Pool) lruIdle() (Key, bool) {
	var best Key
	var bestUsed time.Time
	found := false
	for key, e := range p.kernels {
		if e.k.Busy() {
			continue
		}
		if !found || e.used.Before(bestUsed) {
			best, bestUsed, found = key, e.used, true
		}
	}
	return best, found
}

// Remove closes every kernel whose key matches (an owner's, when its
// session ends).
func (p *Pool) Remove(ctx context.Context, match func(Key) bool) error {
	p.mu.Lock()
	var gone []*Kernel
	for key, e := range p.kernels {
		if match(key) {
			gone = append(gone, e.k)
			delete(p.kernels, key)
		}
	}
	p.mu.Unlock()
	var errs []error
	for _, k := range gone {
		errs = append(errs, k.Close(ctx))
	}
	return errors.Join(errs...)
}

// Len is the number of live kernels.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.kernels)
}

// janitor closes idle kernels until the pool closes.
func (p *Pool) janitor() {
	tick := time.NewTicker(max(p.opts.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		cutoff := time.Now().Add(-p.opts.IdleTimeout)
		p.Remove(context.Background(), func(key Key) bool {
			e := p.kernels[key] // Remove holds mu while it matches
			last := e.used
			if t := e.k.idleSince(); t.After(last) {
				last = t
			}
			return last.Before(cutoff) && !e.k.Busy()
		})
	}
}

// Close closes every kernel and stops the janitor.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	p.wg.Wait()
	return p.Remove(ctx, func(Key) bool { return true })
}
