package bolt

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkEventJSON fails unless appendJSON writes r as json.Marshal does, or fails where it
// fails.
func checkEventJSON(t *testing.T, r eventRecord) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := r.appendJSON([]byte("x"))
	switch {
	case (err != nil) != (wantErr != nil):
		t.Errorf("appendJSON(%+v): error %v, json.Marshal's %v", r, err, wantErr)
	case err == nil && string(got) != "x"+string(want):
		t.Errorf("appendJSON(%+v) =\n%s\nwant what json.Marshal writes,\n%s", r, got[1:], want)
	}
}

func TestEventJSONIsWhatEncodingJSONWrites(t *testing.T) {
	grant := json.RawMessage(`{"user_id":"ada","svc_id":"3f1c","created_at":"2026-11-27T04:00:00.000Z"}`)
	tests := []struct {
		name string
		r    eventRecord
	}{
		{"empty", eventRecord{}},
		{"a grant", eventRecord{
			ID: "0195f3a2-0000-7000-8000-000000000001", OrgID: "org-1", Time: 1795000000123, RequestID: "req-1",
			ActorKind: "api_key", ActorID: "key-1", Action: "grant.created", TargetKind: "user", TargetID: "ada",
			UserID: "ada", SvcID: "3f1c", After: grant,
		}},
		{"a revoke, no request", eventRecord{ID: "e", OrgID: "o", Time: -5, ActorKind: "system", Action: "grant.revoked", TargetKind: "user", Before: grant}},
		{"strings to escape", eventRecord{
			ID: "<id>", OrgID: "a&b", ActorKind: "quote \" and \\", ActorID: "\x00\b\f\n\r\t\x7f",
			Action: "\u2028\u2029", TargetKind: "é 中文 🙂", TargetID: "bad \xff utf-8", UserID: "\xed\xa0\x80", SvcID: strings.Repeat("<x>", 100),
		}},
		{"raw JSON compacted", eventRecord{Before: json.RawMessage(" { \"a\" : [ 1 , 2 ] ,\n\t\"b\" : null } "), After: json.RawMessage(`"s"`)}},
		{"raw JSON escaped", eventRecord{Before: json.RawMessage(`{"k":"<a href='x'>&amp;</a>"}`), After: json.RawMessage("{\"u\":\"\u2028 and \u2029\",\"e\":\"\xe2\x82\xac\"}")}},
		{"raw JSON invalid", eventRecord{Before: json.RawMessage(`{"a":`)}},
		{"raw JSON invalid after", eventRecord{Before: grant, After: json.RawMessage(`{} {}`)}},
		{"raw JSON with invalid UTF-8", eventRecord{After: json.RawMessage("{\"a\":\"\xff\"}")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkEventJSON(t, tt.r) })
	}
}

func FuzzEventJSON(f *testing.F) {
	f.Add("id", "org", int64(1), "req", "api_key", "key", "grant.created", "user", "ada", "ada", "svc", []byte(`{"a":1}`), []byte(nil))
	f.Add("<", "&", int64(-1), "", "\u2028", "", "\xff", "", "", "", "", []byte(" [ \"<\" ] "), []byte(`{"`))
	f.Fuzz(func(t *testing.T, id, org string, time int64, req, actorKind, actorID, action, targetKind, targetID, user, svc string, before, after []byte) {
		checkEventJSON(t, eventRecord{
			ID: id, OrgID: org, Time: time, RequestID: req, ActorKind: actorKind, ActorID: actorID, Action: action,
			TargetKind: targetKind, TargetID: targetID, UserID: user, SvcID: svc, Before: before, After: after,
		})
	})
}
