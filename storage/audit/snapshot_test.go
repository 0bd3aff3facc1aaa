package audit

import (
	"encoding/json"
	"testing"
	"time"
)

func TestHoldingSnapshotIsWhatEncodingJSONWrites(t *testing.T) {
	type fields struct {
		UserID    string `json:"user_id,omitempty"`
		GroupID   string `json:"group_id,omitempty"`
		SvcID     string `json:"svc_id"`
		CreatedAt string `json:"created_at,omitempty"`
		ExpiresAt string `json:"expires_at,omitempty"`
	}
	format := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	created := time.Date(2026, 11, 27, 4, 5, 6, 789_000_000, time.UTC)
	expires := time.Date(2027, 1, 2, 3, 4, 5, 0, time.FixedZone("UTC+5", 5*3600))
	tests := []struct {
		name              string
		group             bool
		holder, svc       string
		created, expiring time.Time
	}{
		{"a revoked grant", false, "ada", "3f1c0000-0000-0000-0000-000000000000", time.Time{}, time.Time{}},
		{"a grant", false, "ada", "svc", created, time.Time{}},
		{"an expiring grant", false, "ada", "svc", created, expires},
		{"a group's", true, "eng", "svc", created, expires},
		{"strings to escape", false, "<b>&\"\\\n\u2028\xff", "é", time.Time{}, expires},
		{"a far year", true, "g", "s", time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fields{SvcID: tt.svc, CreatedAt: format(tt.created), ExpiresAt: format(tt.expiring)}
			got := grantSnapshot(tt.holder, tt.svc, tt.created, tt.expiring)
			if f.UserID = tt.holder; tt.group {
				got = groupGrantSnapshot(tt.holder, tt.svc, tt.created, tt.expiring)
				f.UserID, f.GroupID = "", tt.holder
			}
			want, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("snapshot =\n%s\nwant what json.Marshal writes,\n%s", got, want)
			}
		})
	}
}
