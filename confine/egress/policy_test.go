package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// get fetches u through the proxy on a fresh connection and returns the
// status and body (0 after an error, which fails the test). It may run
// in a goroutine of the test.
func get(t *testing.T, p *Proxy, u string) (int, string) {
	t.Helper()
	proxyURL, _ := url.Parse("http://" + p.Addr())
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: hang}).Get(u)
	if err != nil {
		t.Errorf("GET %s: %v", u, err)
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestAsk_Scopes: a destination on neither list is asked about; a once
// answer holds for one connection, a session or always answer for all of
// them, an always allow is passed to Persist, and an error is a refusal
// with a reason.
func TestAsk_Scopes(t *testing.T) {
	plain, _ := backend(t)
	port := serverPort(t, plain)
	tests := []struct {
		scope     string
		allow     bool
		err       error
		wantCode  int
		wantAsks  int32
		persisted bool
		reason    string
	}{
		{ScopeOnce, true, nil, 200, 2, false, ""},
		{ScopeSession, true, nil, 200, 1, false, ""},
		{ScopeAlways, true, nil, 200, 1, true, ""},
		{ScopeOnce, false, nil, 403, 2, false, "refused when asked"},
		{ScopeSession, false, nil, 403, 1, false, "refused when asked"},
		{ScopeAlways, false, nil, 403, 1, false, "refused when asked"},
		{"", false, errors.New("nobody answered"), 403, 2, false, "the question was not answered (nobody answered)"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v/%v", tt.scope, tt.allow, tt.err), func(t *testing.T) {
			var asks atomic.Int32
			var persisted []Rule
			p := startProxy(t, Options{
				Ask: func(ctx context.Context, host string, port int) (bool, string, error) {
					asks.Add(1)
					return tt.allow, tt.scope, tt.err
				},
				Persist: func(r Rule) error { persisted = append(persisted, r); return nil },
			})
			for range 2 {
				code, body := get(t, p, plain.URL+"/asked")
				if code != tt.wantCode || (code == 403 && !strings.Contains(body, tt.reason)) {
					t.Fatalf("GET = %d %q; want %d with %q", code, body, tt.wantCode, tt.reason)
				}
			}
			if got := asks.Load(); got != tt.wantAsks {
				t.Fatalf("asked %d times; want %d", got, tt.wantAsks)
			}
			wantPersisted := []Rule(nil)
			if tt.persisted {
				wantPersisted = []Rule{{Host: "127.0.0.1", Port: port}}
			}
			if fmt.Sprint(persisted) != fmt.Sprint(wantPersisted) {
				t.Fatalf("persisted %v; want %v", persisted, wantPersisted)
			}
			if v, _ := p.Violations(0); (tt.wantCode == 403) != (len(v) == 2) {
				t.Fatalf("violations = %+v", v)
			}
		})
	}
}

// TestAsk_ListsComeFirst: the deny-list wins over the allow-list and is
// never asked about; the allow-list is never asked about either.
func TestAsk_ListsComeFirst(t *testing.T) {
	plain, _ := backend(t)
	port := serverPort(t, plain)
	var asks atomic.Int32
	p := startProxy(t, Options{
		Allow: rules(t, "127.0.0.1"),
		Deny:  rules(t, fmt.Sprintf("127.0.0.1:%d", port)),
		Ask: func(context.Context, string, int) (bool, string, error) {
			asks.Add(1)
			return true, ScopeOnce, nil
		},
	})
	code, body := get(t, p, plain.URL)
	want := fmt.Sprintf("on the deny-list (rule 127.0.0.1:%d)", port)
	if code != 403 || !strings.Contains(body, want) || asks.Load() != 0 {
		t.Fatalf("GET = %d %q after %d asks; want 403 %q, no ask", code, body, asks.Load(), want)
	}
	if v, _ := p.Violations(0); len(v) != 1 || v[0].Rule != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Fatalf("violations = %+v; want one naming the rule", v)
	}
	if verdict, _ := p.Check(t.Context(), "127.0.0.1", port+1); verdict != Allow || asks.Load() != 0 {
		t.Fatalf("Check(another port) = %v after %d asks; want allow without asking", verdict, asks.Load())
	}
}

// TestAsk_ConcurrentShareOneQuestion: connections that want the same
// destination while it is being asked about wait for that one answer
// instead of asking again (a once answer included).
func TestAsk_ConcurrentShareOneQuestion(t *testing.T) {
	plain, _ := backend(t)
	const n = 5
	var asks atomic.Int32
	release := make(chan struct{})
	p := startProxy(t, Options{Ask: func(ctx context.Context, host string, port int) (bool, string, error) {
		asks.Add(1)
		<-release
		return true, ScopeOnce, nil
	}})
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() { codes[i], _ = get(t, p, plain.URL) })
	}
	// Release the answer once all n connections are inside the decision:
	// one asking, the others waiting on its question.
	deadline := time.Now().Add(hang)
	for deciding() < n {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("only %d of %d connections reached the question", deciding(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if asks.Load() != 1 {
		t.Fatalf("asked %d times; want 1", asks.Load())
	}
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("connection %d got %d; want 200", i, c)
		}
	}
}

// deciding counts the goroutines inside the policy's decision.
func deciding() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "egress.(*policy).decide(")
}
