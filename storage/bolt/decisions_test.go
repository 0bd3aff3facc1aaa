package bolt

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/grantry/grantry/storage"
)

// benchDecision is a decision as make bench's checks make them.
var benchDecision = decisionRecord{
	Time: 1795352088822, RequestID: "dc14df9a-cc61-46a0-87cf-496c9e1c2ff7", APIKeyID: "bench", Endpoint: "can_user_access",
	UserID: "user-0005676", ResourceIDs: []string{"bf00a6fc-2256-4b54-b0e3-bfd2f064ba21"}, Allowed: false,
	PolicyRevision: "615244efcd80573a17942645f51f9c16711e246dd0ff1696c7df2c3aa7f39b5e", DurationMicros: 1453,
}

// TestDecisionValueRoundTrip: every record reads back as it was written, its ids from the key.
func TestDecisionValueRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		r    decisionRecord
	}{
		{"a check", benchDecision},
		{"empty optional fields and no resources", decisionRecord{Endpoint: "can_user_access_all", UserID: "u", ResourceIDs: []string{}}},
		{"nil resources, negative numbers", decisionRecord{Time: -1, DurationMicros: -3}},
		{"escapes and bytes that are not UTF-8", decisionRecord{UserID: "a\"b\\c<d>&e\n\u2028é\xff", ResourceIDs: []string{"\x00", "ok", "<"}, RequestID: "\t"}},
		{"UUIDs not in canonical form are kept as they are", decisionRecord{UserID: "BF00A6FC-2256-4B54-B0E3-BFD2F064BA21",
			ResourceIDs: []string{"bf00a6fc22564b54b0e3bfd2f064ba21", "bf00a6fc-2256-4b54-b0e3-bfd2f064ba2", "bf00a6fc-2256-4b54-b0e3-bfd2f064ba21 ", "bf00a6fc_2256_4b54_b0e3_bfd2f064ba21"}}},
		{"hexadecimal of odd length, or with upper case", decisionRecord{PolicyRevision: "abc", UserID: "ABCD", APIKeyID: "0a"}},
		{"long strings and many resources", decisionRecord{UserID: strings.Repeat("ü", 300), ResourceIDs: strings.Split(strings.Repeat("bf00a6fc-2256-4b54-b0e3-bfd2f064ba21,", 1000)+"x", ","), Allowed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.r
			want.ID, want.OrgID = "0190-1-a", "org"
			value := tt.r.appendBinary([]byte("kept"))
			if string(value[:4]) != "kept" {
				t.Fatalf("appendBinary changed what b held")
			}
			got, err := readDecision(want.OrgID, want.ID, value[4:])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

// TestDecisionValueSize: a check's decision takes a fraction of the bytes its JSON took, the
// reason for the compact form.
func TestDecisionValueSize(t *testing.T) {
	full := benchDecision
	full.ID, full.OrgID = "01a20352d0f6-000000000001-c41a3fce", "9f6067c4-caa7-419a-9c89-39024892e324"
	js, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(benchDecision.appendBinary(nil)); n > 120 || len(js) < 3*n {
		t.Errorf("a check's decision takes %d bytes, its JSON %d: want at most 120, and a third of its JSON", n, len(js))
	}
	// In a block of a batch, with its id: less than a decision of its own would take with its
	// key (the organization's id, its own, two zeros) and a 16-byte element header beside the
	// value.
	entries := make([]decisionEntry, 500)
	for i := range entries {
		entries[i] = decisionEntry{full.ID, benchDecision.appendBinary(nil)}
	}
	if n := len(appendBlock(nil, entries)) / len(entries); n > 155 {
		t.Errorf("a check's decision takes %d bytes of a block, want at most 155", n)
	}
}

// TestReadDecisionRefusesDamagedValues: a value cut short, with bytes after its end, of an
// unknown form or with unknown flags is an error, never a record or a panic.
func TestReadDecisionRefusesDamagedValues(t *testing.T) {
	value := benchDecision.appendBinary(nil)
	for n := range len(value) {
		if _, err := readDecision("org", "id", value[:n]); err == nil {
			t.Errorf("the first %d of %d bytes read as a decision", n, len(value))
		}
	}
	damaged := map[string][]byte{
		"a byte after its end":  append(value[:len(value):len(value)], 0),
		"another form":          append([]byte{0x02}, value[1:]...),
		"unknown flags":         decisionRecord{ResourceIDs: []string{}}.appendBinary(nil),
		"no resources, counted": decisionRecord{}.appendBinary(nil),
		"not a JSON object":     []byte("{"),
	}
	damaged["unknown flags"][3] |= 0x80 // format, time 0, duration 0, flags
	noResource := damaged["no resources, counted"]
	noResource[len(noResource)-1] = 1
	for name, v := range damaged {
		if r, err := readDecision("org", "id", v); err == nil {
			t.Errorf("%s: read as %#v", name, r)
		}
	}
}

// FuzzDecisionValue: any record reads back as written, and any bytes read without a panic.
func FuzzDecisionValue(f *testing.F) {
	f.Add("user-1", "bf00a6fc-2256-4b54-b0e3-bfd2f064ba21", "615244efcd", int64(1795352088822), true, []byte{1, 2, 3})
	f.Add("a\"<\u2028\xff", "", "", int64(-1), false, benchDecision.appendBinary(nil))
	f.Fuzz(func(t *testing.T, user, resource, revision string, at int64, allowed bool, raw []byte) {
		r := decisionRecord{ID: "id", OrgID: "org", Time: at, RequestID: resource, APIKeyID: revision, Endpoint: user,
			UserID: user, ResourceIDs: []string{resource, user, revision}, Allowed: allowed, PolicyRevision: revision, DurationMicros: -at}
		got, err := readDecision("org", "id", r.appendBinary(nil))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("read back %#v, %v\nwant %#v", got, err, r)
		}
		_, _ = readDecision("org", "id", raw)
	})
}

// TestListDecisionsReadsJSONValues: decisions stored as JSON by earlier versions are listed, and
// filtered by user, resource and answer, alongside those stored in the compact form.
func TestListDecisionsReadsJSONValues(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "grantry.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var ids storage.EntryIDs
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	decision := func(user, resource string, allowed bool) storage.Decision {
		at = at.Add(time.Second)
		return storage.Decision{ID: ids.New(at), OrgID: "org", Time: at, RequestID: "req", APIKeyID: "key", Endpoint: "can_user_access",
			UserID: user, ResourceIDs: []string{resource}, Allowed: allowed, PolicyRevision: "rev", Duration: 7 * time.Microsecond}
	}
	const r1, r2 = "bf00a6fc-2256-4b54-b0e3-bfd2f064ba21", "0b6f1a52-6a51-4c59-9a43-3c1f4f2f6a01"
	old := []storage.Decision{decision("ada", r1, true), decision("bob", r2, false), decision("ada", r2, false)}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		for _, d := range old {
			v, err := json.Marshal(decisionRecord{ID: d.ID, OrgID: d.OrgID, Time: millis(d.Time), RequestID: d.RequestID,
				APIKeyID: d.APIKeyID, Endpoint: d.Endpoint, UserID: d.UserID, ResourceIDs: d.ResourceIDs, Allowed: d.Allowed,
				PolicyRevision: d.PolicyRevision, DurationMicros: d.Duration.Microseconds()})
			if err != nil {
				return err
			}
			if err := tx.Bucket(bucketDecisions).Put(key(d.OrgID, d.ID), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	current := []storage.Decision{decision("bob", r1, true), decision("ada", r1, true)}
	if err := s.InsertDecisions(ctx, current); err != nil {
		t.Fatal(err)
	}
	yes := true
	tests := []struct {
		name string
		f    storage.DecisionFilter
		want []storage.Decision // newest first
	}{
		{"all", storage.DecisionFilter{}, []storage.Decision{current[1], current[0], old[2], old[1], old[0]}},
		{"a user", storage.DecisionFilter{UserID: "ada"}, []storage.Decision{current[1], old[2], old[0]}},
		{"a resource", storage.DecisionFilter{SvcID: r2}, []storage.Decision{old[2], old[1]}},
		{"a user and a resource", storage.DecisionFilter{UserID: "bob", SvcID: r1}, []storage.Decision{current[0]}},
		{"allowed", storage.DecisionFilter{Allowed: &yes}, []storage.Decision{current[1], current[0], old[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Limit = 100
			got, err := s.ListDecisions(ctx, "org", tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("listed %d decisions, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if w := tt.want[i]; got[i].ID != w.ID || got[i].UserID != w.UserID || !reflect.DeepEqual(got[i].ResourceIDs, w.ResourceIDs) ||
					got[i].Allowed != w.Allowed || !got[i].Time.Equal(w.Time) || got[i].Duration != w.Duration || got[i].RequestID != w.RequestID ||
					got[i].APIKeyID != w.APIKeyID || got[i].PolicyRevision != w.PolicyRevision || got[i].Endpoint != w.Endpoint || got[i].OrgID != w.OrgID {
					t.Errorf("decision %d = %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}
