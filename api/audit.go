package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/grantry/grantry/storage"
)

// Paging of the audit lists.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// decisionJSON is one entry of GET /audit/decisions.
type decisionJSON struct {
	ID             string   `json:"id"`
	Time           string   `json:"time"`
	RequestID      string   `json:"request_id"`
	APIKeyID       string   `json:"api_key_id"`
	Endpoint       string   `json:"endpoint"`
	UserID         string   `json:"user_id"`
	ResourceIDs    []string `json:"resource_ids"`
	Result         bool     `json:"result"`
	PolicyRevision string   `json:"policy_revision"`
	DurationMS     float64  `json:"duration_ms"`
}

// eventJSON is one entry of GET /audit/events. Fields that do not apply are null.
type eventJSON struct {
	ID        string          `json:"id"`
	Time      string          `json:"time"`
	RequestID *string         `json:"request_id"`
	Actor     actorJSON       `json:"actor"`
	Action    string          `json:"action"`
	Target    targetJSON      `json:"target"`
	UserID    *string         `json:"user_id"`
	SvcID     *string         `json:"svc_id"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
}

type actorJSON struct {
	Kind string  `json:"kind"`
	ID   *string `json:"id"`
}

type targetJSON struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// orNull is nil for an empty string, so that a field that does not apply reads null.
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// listDecisions answers the caller's organization's decision log, newest first.
func (s *Server) listDecisions(c *gin.Context) {
	q, err := parseAuditQuery(c, "decisions", true, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	org := orgID(c)
	ds, err := s.store.ListDecisions(c.Request.Context(), org, storage.DecisionFilter{
		UserID: q.userID, SvcID: q.svcID, Allowed: q.result, Since: q.since, Until: q.until, Cursor: q.cursor, Limit: q.limit + 1,
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	ds, next := pageOf(ds, q.limit, "decisions", org, func(d storage.Decision) string { return d.ID })
	out := make([]decisionJSON, len(ds))
	for i, d := range ds {
		ids := d.ResourceIDs
		if ids == nil {
			ids = []string{}
		}
		out[i] = decisionJSON{
			ID: d.ID, Time: timestamp(d.Time), RequestID: d.RequestID, APIKeyID: d.APIKeyID, Endpoint: d.Endpoint,
			UserID: d.UserID, ResourceIDs: ids, Result: d.Allowed, PolicyRevision: d.PolicyRevision,
			DurationMS: float64(d.Duration.Microseconds()) / 1000,
		}
	}
	c.JSON(http.StatusOK, gin.H{"decisions": out, "next_cursor": next})
}

// listEvents answers the caller's organization's audit trail, newest first.
func (s *Server) listEvents(c *gin.Context) {
	q, err := parseAuditQuery(c, "events", false, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	org := orgID(c)
	es, err := s.store.ListEvents(c.Request.Context(), org, storage.EventFilter{
		UserID: q.userID, SvcID: q.svcID, Action: q.action, Since: q.since, Until: q.until, Cursor: q.cursor, Limit: q.limit + 1,
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	es, next := pageOf(es, q.limit, "events", org, func(e storage.Event) string { return e.ID })
	out := make([]eventJSON, len(es))
	for i, e := range es {
		out[i] = eventJSON{
			ID: e.ID, Time: timestamp(e.Time), RequestID: orNull(e.RequestID),
			Actor:  actorJSON{Kind: e.Actor.Kind, ID: orNull(e.Actor.ID)},
			Action: e.Action, Target: targetJSON{Kind: e.TargetKind, ID: e.TargetID},
			UserID: orNull(e.UserID), SvcID: orNull(e.SvcID), Before: e.Before, After: e.After,
		}
	}
	c.JSON(http.StatusOK, gin.H{"events": out, "next_cursor": next})
}

// auditQuery holds the filters and paging of the audit lists.
type auditQuery struct {
	userID, svcID, action string
	result                *bool
	since, until          time.Time
	limit                 int
	cursor                string // the id of the last entry of the previous page
}

// parseAuditQuery reads the query parameters of an audit list, reporting every problem at
// once as FastAPI would. list names the list, so that a cursor of one list is refused by the
// other; result and action say whether the list has those filters.
func parseAuditQuery(c *gin.Context, list string, result, action bool) (auditQuery, error) {
	var q auditQuery
	var problems []Problem
	bad := func(name, typ, msg string) {
		problems = append(problems, Problem{Loc: []any{"query", name}, Msg: msg, Type: typ})
	}
	str := func(name string) string {
		v, err := queryParam(c, name)
		if ve, ok := errors.AsType[*ValidationError](err); ok {
			problems = append(problems, ve.Problems...)
		}
		return v
	}
	q.userID = str("user_id")
	if v, ok := c.GetQuery("svc_id"); ok {
		if isUUID(v) {
			q.svcID = canonicalID(v)
		} else {
			bad("svc_id", "uuid_parsing", msgUUID)
		}
	}
	if action {
		q.action = str("action")
	}
	if v, ok := c.GetQuery("result"); ok && result {
		if b, ok := parseBool(v); ok {
			q.result = &b
		} else {
			bad("result", "bool_parsing", "Input should be a valid boolean, unable to interpret input")
		}
	}
	for name, dst := range map[string]*time.Time{"since": &q.since, "until": &q.until} {
		if v, ok := c.GetQuery(name); ok {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				bad(name, "datetime_parsing", "Input should be a valid datetime in RFC 3339 format, such as 2026-11-22T09:30:00Z")
				continue
			}
			*dst = ceilMilli(t)
		}
	}
	q.limit = queryLimit(c, defaultAuditLimit, maxAuditLimit, bad)
	if v, ok := c.GetQuery("cursor"); ok {
		id, ok := decodeCursor(list, orgID(c), v)
		if !ok {
			bad("cursor", "value_error", "Value error, the cursor is not one this list gave for these credentials")
		}
		q.cursor = id
	}
	if len(problems) > 0 {
		sortProblems(problems)
		return q, &ValidationError{Problems: problems}
	}
	return q, nil
}

// auditParams is the order in which problems with the audit lists' parameters are reported.
var auditParams = []string{"user_id", "svc_id", "action", "result", "since", "until", "limit", "cursor"}

func sortProblems(problems []Problem) {
	rank := func(p Problem) int {
		for i, name := range auditParams {
			if p.Loc[1] == name {
				return i
			}
		}
		return len(auditParams)
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return rank(a) - rank(b) })
}

// ceilMilli rounds t up to the millisecond, the precision of stored times, so that "since" and
// "until" select exactly the entries at or after, and before, the instant given.
func ceilMilli(t time.Time) time.Time {
	m := t.Truncate(time.Millisecond)
	if m.Before(t) {
		m = m.Add(time.Millisecond)
	}
	return m.UTC()
}

// parseBool accepts what pydantic accepts as a boolean in a query string.
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true", "1", "t", "y", "yes", "on":
		return true, true
	case "false", "0", "f", "n", "no", "off":
		return false, true
	}
	return false, false
}

// A cursor names the last entry of a page, the list it came from, and a digest of the
// organization that asked, so that it is useless with another list or another organization's
// key. It is opaque to clients; its only secret is nothing an organization could not see.
func encodeCursor(list, org, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(list + "." + orgDigest(org) + "." + id))
}

// pageOf cuts entries, read one beyond limit, to limit, and returns the cursor of the next page
// of list, or nil when there was nothing beyond.
func pageOf[T any](entries []T, limit int, list, org string, id func(T) string) ([]T, *string) {
	if len(entries) <= limit {
		return entries, nil
	}
	entries = entries[:limit]
	return entries, orNull(encodeCursor(list, org, id(entries[limit-1])))
}

func decodeCursor(list, org, cursor string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	parts := strings.SplitN(string(raw), ".", 3)
	if len(parts) != 3 || parts[0] != list || parts[1] != orgDigest(org) || parts[2] == "" {
		return "", false
	}
	return parts[2], true
}

func orgDigest(org string) string {
	sum := sha256.Sum256([]byte(org))
	return hex.EncodeToString(sum[:8])
}

// queryLimit reads the limit query parameter of a paged list: def when it is absent, and
// reported through bad (as FastAPI words it) unless it is a whole number from 1 to most.
func queryLimit(c *gin.Context, def, most int, bad func(name, typ, msg string)) int {
	v, ok := c.GetQuery("limit")
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		bad("limit", "int_parsing", "Input should be a valid integer, unable to parse string as an integer")
	case n < 1:
		bad("limit", "greater_than_equal", "Input should be greater than or equal to 1")
	case n > most:
		bad("limit", "less_than_equal", fmt.Sprintf("Input should be less than or equal to %d", most))
	default:
		return n
	}
	return def
}
