package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// answerTransport answers every request with status and body, without a network.
type answerTransport struct {
	status int
	body   []byte
}

func (t answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: t.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(t.body)), Request: r,
	}, nil
}

// FuzzAnswers feeds arbitrary answers, of any status, to every provider client: a provider's
// answer is untrusted input. Whatever it is, a client does not panic, fails with exactly one of
// the two sentinels (ErrRejected only for 401 and 403), never repeats the key in its error,
// even when the body quotes it, and lists only named indexes.
func FuzzAnswers(f *testing.F) {
	for _, seed := range []string{
		`{"data":[{"id":"gpt-4o"}]}`, `{"data":[]}`, `{"data":null}`,
		`{"indexes":[{"name":"docs","host":"docs-1.svc.pinecone.io"}]}`, `{"indexes":[{"name":""}]}`,
		`{"result":{"collections":[{"name":"c"}]},"status":"ok"}`, `{"result":null}`,
		`[]`, `null`, `"x"`, `{`, `<html>`, ``,
	} {
		f.Add(200, []byte(seed))
	}
	f.Add(401, []byte(`{"error":"Incorrect API key provided: sk-fuzz-KEY"}`))
	f.Add(500, []byte(`oops`))
	const key = "sk-fuzz-KEY"
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 999 {
			t.Skip()
		}
		rt := WithTransport(answerTransport{status: status, body: body})
		calls := []func() ([]Index, error){
			func() ([]Index, error) {
				return nil, NewOpenAI("http://fake/v1", rt).CheckKey(context.Background(), key)
			},
			func() ([]Index, error) {
				return nil, NewAnthropic("http://fake", rt).CheckKey(context.Background(), key)
			},
			func() ([]Index, error) { return NewPinecone("http://fake", rt).ListIndexes(context.Background(), key) },
			func() ([]Index, error) { return NewQdrant("http://fake", rt).ListIndexes(context.Background(), key) },
		}
		for _, call := range calls {
			got, err := call()
			if err == nil {
				if status != http.StatusOK {
					t.Fatalf("status %d accepted", status)
				}
				for _, idx := range got {
					if idx.Name == "" {
						t.Fatalf("an index without a name: %+v", got)
					}
				}
				continue
			}
			rejected, unavailable := errors.Is(err, ErrRejected), errors.Is(err, ErrUnavailable)
			if rejected == unavailable {
				t.Fatalf("error %v wraps neither or both sentinels", err)
			}
			if rejected != (status == http.StatusUnauthorized || status == http.StatusForbidden) {
				t.Fatalf("status %d: error %v", status, err)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatalf("error %q repeats the key", err)
			}
		}
	})
}
