package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const goodKey = "sk-test-GOOD-0123456789abcdef"

// kind describes one provider as its fake must imitate it.
type kind struct {
	name string
	path string
	// keyOf returns the key the request carries where this provider expects it, or "" if the
	// request is not made as the provider requires.
	keyOf func(r *http.Request) string
	// list is the provider's answer listing these indexes (or models).
	list func(names ...string) string
	// call runs the client against base and returns the names it got (nil for model providers).
	call func(ctx context.Context, base, key string, opts ...Option) ([]Index, error)
	// lists says whether call returns what the fake listed.
	lists bool
}

var kinds = []kind{
	{
		name: NameOpenAI, path: "/v1/models",
		keyOf: func(r *http.Request) string {
			key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok {
				return ""
			}
			return key
		},
		list: func(names ...string) string { return modelList(names) },
		call: func(ctx context.Context, base, key string, opts ...Option) ([]Index, error) {
			return nil, NewOpenAI(base+"/v1", opts...).CheckKey(ctx, key)
		},
	},
	{
		name: NameAnthropic, path: "/v1/models",
		keyOf: func(r *http.Request) string {
			if r.Header.Get("anthropic-version") != "2023-06-01" {
				return ""
			}
			return r.Header.Get("X-Api-Key")
		},
		list: func(names ...string) string { return modelList(names) },
		call: func(ctx context.Context, base, key string, opts ...Option) ([]Index, error) {
			return nil, NewAnthropic(base, opts...).CheckKey(ctx, key)
		},
	},
	{
		name: NamePinecone, path: "/indexes", lists: true,
		keyOf: func(r *http.Request) string { return r.Header.Get("Api-Key") },
		list: func(names ...string) string {
			items := make([]string, len(names))
			for i, n := range names {
				items[i] = fmt.Sprintf(`{"name":%q,"dimension":1536,"metric":"cosine","host":"%s-abc.svc.pinecone.io","status":{"ready":true}}`, n, n)
			}
			return `{"indexes":[` + strings.Join(items, ",") + `]}`
		},
		call: func(ctx context.Context, base, key string, opts ...Option) ([]Index, error) {
			return NewPinecone(base, opts...).ListIndexes(ctx, key)
		},
	},
	{
		name: NameQdrant, path: "/collections", lists: true,
		keyOf: func(r *http.Request) string { return r.Header.Get("api-key") },
		list: func(names ...string) string {
			items := make([]string, len(names))
			for i, n := range names {
				items[i] = fmt.Sprintf(`{"name":%q}`, n)
			}
			return `{"result":{"collections":[` + strings.Join(items, ",") + `]},"status":"ok","time":0.0001}`
		},
		call: func(ctx context.Context, base, key string, opts ...Option) ([]Index, error) {
			return NewQdrant(base, opts...).ListIndexes(ctx, key)
		},
	},
}

func modelList(names []string) string {
	items := make([]string, len(names))
	for i, n := range names {
		items[i] = fmt.Sprintf(`{"id":%q,"object":"model","type":"model"}`, n)
	}
	return `{"object":"list","data":[` + strings.Join(items, ",") + `],"has_more":false}`
}

// wantIndexes is what a vector database client returns for the fake's list of "a" and "b".
func wantIndexes(k kind, base string) []Index {
	if k.name == NamePinecone {
		return []Index{{Name: "a", Host: "a-abc.svc.pinecone.io"}, {Name: "b", Host: "b-abc.svc.pinecone.io"}}
	}
	host := strings.TrimPrefix(base, "http://")
	return []Index{{Name: "a", Host: host}, {Name: "b", Host: host}}
}

// fake serves one provider. Requests with goodKey at the right path get answer(); others are
// refused as the provider would. Every refusal and failure quotes the key it was sent, as some
// real providers do, so that the tests can see the client never repeats a body.
func fake(t *testing.T, k kind, answer func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != k.path {
			http.Error(w, `{"error":"no route"}`, http.StatusNotFound)
			return
		}
		if key := k.keyOf(r); key != goodKey {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"Incorrect API key provided: %s"}`, key)
			return
		}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func status(code int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":"status %d for key %s"}`, code, goodKey)
	}
}

func body(s string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, s)
	}
}

func TestProviders(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			tests := []struct {
				name   string
				key    string
				answer func(w http.ResponseWriter, r *http.Request)
				want   error // nil: accepted
				empty  bool  // the answer lists nothing
			}{
				{name: "accepted", key: goodKey, answer: body(k.list("a", "b"))},
				{name: "empty list", key: goodKey, answer: body(k.list()), empty: true},
				{name: "wrong key gets 401", key: "sk-wrong-key-987", answer: body(k.list("a")), want: ErrRejected},
				{name: "403", key: goodKey, answer: status(http.StatusForbidden), want: ErrRejected},
				{name: "500", key: goodKey, answer: status(http.StatusInternalServerError), want: ErrUnavailable},
				{name: "503", key: goodKey, answer: status(http.StatusServiceUnavailable), want: ErrUnavailable},
				{name: "429", key: goodKey, answer: status(http.StatusTooManyRequests), want: ErrUnavailable},
				{name: "not JSON", key: goodKey, answer: body("<html>" + goodKey + "</html>"), want: ErrUnavailable},
				{name: "JSON of another shape", key: goodKey, answer: body(`{"items":[]}`), want: ErrUnavailable},
				{name: "JSON null", key: goodKey, answer: body(`null`), want: ErrUnavailable},
				{name: "JSON list", key: goodKey, answer: body(`[]`), want: ErrUnavailable},
				{name: "wrong types", key: goodKey, answer: body(strings.ReplaceAll(k.list("a"), `"a"`, `42`)), want: ErrUnavailable},
				{name: "truncated JSON", key: goodKey, answer: body(k.list("a", "b")[:20]), want: ErrUnavailable},
				{name: "too large", key: goodKey, answer: body(k.list(strings.Repeat("x", maxBody))), want: ErrUnavailable},
				{name: "redirect", key: goodKey, answer: func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
				}, want: ErrUnavailable},
				{name: "dropped connection", key: goodKey, answer: func(w http.ResponseWriter, r *http.Request) {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						panic(err)
					}
					conn.Close()
				}, want: ErrUnavailable},
				{name: "dropped mid-body", key: goodKey, answer: func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Length", "1000")
					fmt.Fprint(w, k.list("a")[:10])
					w.(http.Flusher).Flush()
					conn, _, _ := http.NewResponseController(w).Hijack()
					conn.Close()
				}, want: ErrUnavailable},
				{name: "timeout", key: goodKey, answer: func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-r.Context().Done():
					case <-time.After(time.Minute):
					}
				}, want: ErrUnavailable},
				{name: "key with a newline", key: goodKey + "\r\nX-Injected: 1", answer: body(k.list("a")), want: ErrRejected},
				{name: "empty key", key: "", answer: body(k.list("a")), want: ErrRejected},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					srv := fake(t, k, tt.answer)
					start := time.Now()
					// Only the timeout case waits the limit out; the others get room on a loaded machine.
					limit := 10 * time.Second
					if tt.name == "timeout" {
						limit = 100 * time.Millisecond
					}
					got, err := k.call(t.Context(), srv.URL, tt.key, WithTimeout(limit))
					// A call the limit did not end would wait for the fake's minute.
					if elapsed := time.Since(start); tt.name == "timeout" && elapsed > 30*time.Second {
						t.Errorf("the call took %v", elapsed)
					}
					if tt.want == nil {
						if err != nil {
							t.Fatalf("error = %v, want none", err)
						}
						if !k.lists {
							return
						}
						var want []Index
						if !tt.empty {
							want = wantIndexes(k, srv.URL)
						}
						if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
							t.Errorf("indexes (-want +got):\n%s", diff)
						}
						return
					}
					if !errors.Is(err, tt.want) {
						t.Fatalf("error = %v, want %v", err, tt.want)
					}
					if got != nil {
						t.Errorf("indexes = %v with an error", got)
					}
					msg := err.Error()
					if !strings.HasPrefix(msg, k.name) {
						t.Errorf("error %q does not start with the provider's name", msg)
					}
					for _, secret := range []string{goodKey, "sk-wrong-key-987", "Incorrect API key", srv.URL} {
						if strings.Contains(msg, secret) {
							t.Errorf("error %q shows %q", msg, secret)
						}
					}
				})
			}
		})
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []Index) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return cmp.Equal(a, b)
})

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	l.Close()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			_, err := k.call(t.Context(), base, goodKey)
			if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), goodKey) {
				t.Errorf("error = %v, want ErrUnavailable without the key", err)
			}
		})
	}
}

func TestContextCancelled(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			started := make(chan struct{})
			srv := fake(t, k, func(w http.ResponseWriter, r *http.Request) {
				close(started)
				<-r.Context().Done()
			})
			ctx, cancel := context.WithCancel(t.Context())
			go func() { <-started; cancel() }()
			start := time.Now()
			// The client's own limit is long: only the context can end this call soon.
			_, err := k.call(ctx, srv.URL, goodKey, WithTimeout(time.Minute))
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("error = %v, want ErrUnavailable", err)
			}
			if elapsed := time.Since(start); elapsed > 30*time.Second {
				t.Errorf("a cancelled call took %v", elapsed)
			}
		})
	}
}

// TestRedirectKeepsKey checks that a redirect is not followed: the key's header would go along
// to wherever it points.
func TestRedirectKeepsKey(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for name, values := range r.Header {
					if strings.Contains(strings.Join(values, " "), goodKey) {
						t.Errorf("the redirect target got the key in %s", name)
					}
				}
				fmt.Fprint(w, k.list("a"))
			}))
			defer elsewhere.Close()
			srv := fake(t, k, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+k.path, http.StatusTemporaryRedirect)
			})
			if _, err := k.call(t.Context(), srv.URL, goodKey); !errors.Is(err, ErrUnavailable) {
				t.Errorf("error = %v, want ErrUnavailable", err)
			}
		})
	}
}

func TestBaseURLTrailingSlash(t *testing.T) {
	srv := fake(t, kinds[2], body(kinds[2].list("a")))
	got, err := NewPinecone(srv.URL+"/").ListIndexes(t.Context(), goodKey)
	if err != nil || len(got) != 1 {
		t.Errorf("ListIndexes with a trailing slash on the base URL = %v, %v", got, err)
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{NewOpenAI("").Name(), "openai"},
		{NewAnthropic("").Name(), "anthropic"},
		{NewPinecone("").Name(), "pinecone"},
		{NewQdrant("").Name(), "qdrant"},
	} {
		if tt.got != tt.want {
			t.Errorf("Name() = %q, want %q", tt.got, tt.want)
		}
	}
}
