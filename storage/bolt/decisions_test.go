package bolt

import (
	"encoding/json"
	"testing"
)

// TestDecisionRecordJSON checks that the hand-written encoder writes what encoding/json
// writes, which ListDecisions' needles and its decoder rely on.
func TestDecisionRecordJSON(t *testing.T) {
	tests := []struct {
		name string
		r    decisionRecord
	}{
		{"plain", decisionRecord{ID: "0190-1-a", OrgID: "default", Time: 1700000000000, RequestID: "req", APIKeyID: "key",
			Endpoint: "can_user_access", UserID: "alice", ResourceIDs: []string{"r1"}, Allowed: true, PolicyRevision: "abc", DurationMicros: 12}},
		{"empty optional fields and no resources", decisionRecord{ID: "x", OrgID: "o", Endpoint: "can_user_access_all", UserID: "u", ResourceIDs: []string{}}},
		{"nil resources", decisionRecord{ID: "x", OrgID: "o", Time: -1, DurationMicros: -3}},
		{"escapes", decisionRecord{ID: "x", OrgID: "o", UserID: "a\"b\\c<d>&e\n\u2028é\xff", ResourceIDs: []string{"\x00", "ok", "<"}, RequestID: "\t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.r.appendJSON([]byte("kept")); string(got) != "kept"+string(want) {
				t.Errorf("appendJSON\n got %s\nwant kept%s", got, want)
			}
		})
	}
}

func FuzzDecisionRecordJSON(f *testing.F) {
	f.Add("alice", "6f1c0f1e-0000-4000-8000-000000000000", "req-1", int64(1700000000000), true)
	f.Add("a\"<\u2028\xff", "", "", int64(-1), false)
	f.Fuzz(func(t *testing.T, user, resource, request string, at int64, allowed bool) {
		r := decisionRecord{ID: resource + user, OrgID: request, Time: at, RequestID: request, Endpoint: user,
			UserID: user, ResourceIDs: []string{resource, user}, Allowed: allowed, PolicyRevision: resource, DurationMicros: at}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
	})
}
