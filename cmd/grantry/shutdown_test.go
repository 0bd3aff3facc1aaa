package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grantry/grantry/api"
	"github.com/grantry/grantry/authz"
	"github.com/grantry/grantry/policy"
	"github.com/grantry/grantry/storage"
	"github.com/grantry/grantry/storage/bolt"
)

// slowStore is a store whose Grant, once slow is set, tells entered and then waits for release:
// a request that stays in flight for as long as the test wants.
type slowStore struct {
	storage.Store
	slow    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *slowStore) SetGrant(ctx context.Context, g storage.Grant) (*storage.Grant, error) {
	if s.slow.Load() {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.Store.SetGrant(ctx, g)
}

// served is a server run by serveUntilDone on a free port, as serve runs it.
type served struct {
	url    string
	srv    *api.Server
	store  *slowStore
	path   string
	key    string
	user   string
	model  string
	stop   context.CancelFunc
	result func() error // waits for serveUntilDone and returns what it returned
	mu     sync.Mutex
	closed []string // names of the closers, in the order they ran
}

func startServed(t *testing.T, drain time.Duration) *served {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "grantry.db")
	b, err := bolt.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	store := &slowStore{Store: b, entered: make(chan struct{}, 1), release: make(chan struct{})}
	engine, err := policy.New(ctx, policy.Embedded())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Bootstrap(ctx, store, "boot-key", time.Now()); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	eng := authz.New(authz.Config{Store: store, Policies: policy.NewLive(engine)})
	s := &served{srv: api.New(api.Config{Store: eng.Store(), Decider: eng, Logger: log, RequestTimeout: time.Minute}),
		store: store, path: path, key: "boot-key"}
	cs := &closers{log: log}
	cs.add("store", func(ctx context.Context) error { s.record("store"); return store.Close(ctx) })
	cs.add("decision log", func(context.Context) error { s.record("decision log"); return nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.url = "http://" + ln.Addr().String()
	runCtx, stop := context.WithCancel(ctx)
	s.stop = stop
	done := make(chan error, 1)
	go func() {
		done <- serveUntilDone(runCtx, log, newHTTPServer(s.srv, time.Minute, log), ln, s.srv.SetReady, drain, cs)
	}()
	s.result = sync.OnceValue(func() error { return <-done })
	t.Cleanup(func() {
		stop()
		select {
		case <-store.release:
		default:
			close(store.release)
		}
		s.result()
		cs.closeAll()
	})

	s.model = httpPostField(t, s.url+"/llm_integration/custom_model", s.key, `{"model_name":"m"}`, "model", "id")
	integ := httpPostField(t, s.url+"/auth_integration/create", s.key, `{"name":"hr"}`, "auth_integration", "id")
	s.user = "ada"
	httpPostField(t, s.url+"/users/import", s.key, `{"auth_integration_id":"`+integ+`","users":[{"id":"ada","email":"ada@x"}]}`, "", "")
	return s
}

func (s *served) record(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = append(s.closed, name)
}

func (s *served) closedInOrder() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.closed...)
}

// httpPostField posts body and returns the string at obj.field of the 200 answer ("" if obj is "").
func httpPostField(tb testing.TB, url, key, body, obj, field string) string {
	tb.Helper()
	status, data, err := httpPost(url, key, body)
	if err != nil || status != http.StatusOK {
		tb.Fatalf("POST %s = %d %s, %v", url, status, data, err)
	}
	if obj == "" {
		return ""
	}
	var v map[string]map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		tb.Fatalf("POST %s: %s: %v", url, data, err)
	}
	s, _ := v[obj][field].(string)
	return s
}

func httpPost(url, key, body string) (int, []byte, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// readyStatus asks the server's handler directly, since its listener may be closed already.
func readyStatus(srv *api.Server) int {
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	return rec.Code
}

// TestShutdownDrainsInFlightRequest: on shutdown, readiness turns false and the listener closes
// at once, a request in flight still completes with 200, and only then do the closers run, the
// store last.
func TestShutdownDrainsInFlightRequest(t *testing.T) {
	s := startServed(t, 10*time.Second)
	s.store.slow.Store(true)

	answer := make(chan int, 1)
	go func() {
		status, _, _ := httpPost(s.url+"/provisions/add_to_user", s.key, `{"user_id":"ada","svc_id":"`+s.model+`"}`)
		answer <- status
	}()
	<-s.store.entered
	s.stop() // what SIGTERM does

	waitFor(t, "readiness off", func() bool { return readyStatus(s.srv) == http.StatusServiceUnavailable })
	waitFor(t, "the listener closed", func() bool {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	time.Sleep(50 * time.Millisecond) // time for closers to run, were they not waiting
	if got := s.closedInOrder(); len(got) != 0 {
		t.Fatalf("closers ran while a request was in flight: %v", got)
	}

	close(s.store.release)
	if status := <-answer; status != http.StatusOK {
		t.Errorf("the in-flight grant answered %d, want 200", status)
	}
	if err := s.result(); err != nil {
		t.Errorf("serveUntilDone = %v, want nil", err)
	}
	if got, want := s.closedInOrder(), []string{"decision log", "store"}; !slices.Equal(got, want) {
		t.Errorf("closers ran in order %v, want %v", got, want)
	}

	// The grant acknowledged during shutdown is in the store.
	b, err := bolt.Open(context.Background(), s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	org, err := b.OrgByName(context.Background(), api.DefaultOrg)
	if err != nil {
		t.Fatal(err)
	}
	grants, err := b.UserGrants(context.Background(), org.ID, "ada")
	if err != nil || len(grants) != 1 || grants[0].ResourceID != s.model {
		t.Errorf("after shutdown, ada's grants = %v, %v; want the one granted during shutdown", grants, err)
	}
}

// TestShutdownGivesUpAfterTimeout: a request that outlives the drain is cut off, shutdown says
// so, and the closers still run.
func TestShutdownGivesUpAfterTimeout(t *testing.T) {
	s := startServed(t, 200*time.Millisecond)
	s.store.slow.Store(true)
	go httpPost(s.url+"/provisions/add_to_user", s.key, `{"user_id":"ada","svc_id":"`+s.model+`"}`)
	<-s.store.entered
	s.stop()
	if err := s.result(); err == nil || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Errorf("serveUntilDone = %v, want an error saying requests did not finish", err)
	}
	if got := s.closedInOrder(); !slices.Equal(got, []string{"decision log", "store"}) {
		t.Errorf("closers after a drain that timed out = %v", got)
	}
}

func TestClosers(t *testing.T) {
	var ran []string
	closer := func(name string, err error) func(context.Context) error {
		return func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("%s closed without a deadline", name)
			}
			ran = append(ran, name)
			return err
		}
	}
	tests := []struct {
		name    string
		add     []string
		fail    string
		wantErr string
	}{
		{"nothing", nil, "", ""},
		{"last added first", []string{"store", "cache", "decision log"}, "", ""},
		{"a failure does not stop the rest", []string{"store", "decision log"}, "decision log", "close decision log: flush failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			var logs bytes.Buffer
			cs := &closers{log: slog.New(slog.NewJSONHandler(&logs, nil))}
			for _, name := range tc.add {
				var err error
				if name == tc.fail {
					err = errors.New("flush failed")
				}
				cs.add(name, closer(name, err))
			}
			err := cs.closeAll()
			if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
				t.Errorf("closeAll = %v, want %q", err, tc.wantErr)
			}
			want := make([]string, len(tc.add))
			for i, name := range tc.add {
				want[len(tc.add)-1-i] = name
			}
			if !slices.Equal(ran, want) {
				t.Errorf("ran %v, want %v", ran, want)
			}
			if tc.fail != "" && !strings.Contains(logs.String(), "close "+tc.fail) {
				t.Errorf("the failure was not logged: %s", logs.String())
			}
			ran = nil
			if err := cs.closeAll(); err != nil || len(ran) != 0 {
				t.Errorf("closing again ran %v, %v; want nothing", ran, err)
			}
		})
	}
}

// waitFor polls cond until it holds, failing the test after a deadline that a loaded machine
// does not reach.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	tb.Fatalf("timed out waiting for %s", what)
}
