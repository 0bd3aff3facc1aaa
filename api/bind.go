package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/go-playground/validator/v10"

	"github.com/grantry/grantry/internal/jsonstr"
)

// maxBodyBytes is the largest request body Grantry reads; a larger one is a 413.
const maxBodyBytes = 1 << 20

// maxProblems bounds the problems one 422 reports. Every problem of a request within the API's
// limits fits (1,000 tags and a user id), but a 1 MiB body of a million wrong list items would
// otherwise take far longer to report than to read, and answer with many times its size.
const maxProblems = 2000

// ValidationError is a request that failed validation, with every problem found, in the shape
// FastAPI clients expect: {"detail":[{"loc":[...],"msg":"...","type":"..."}]}.
type ValidationError struct {
	Problems []Problem
}

// Problem is one item of a ValidationError.
type Problem struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = fmt.Sprintf("%v: %s", p.Loc, p.Type)
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// The messages pydantic gives for each problem type, so that clients matching on them keep working.
const (
	msgMissing    = "Field required"
	msgStringType = "Input should be a valid string"
	msgListType   = "Input should be a valid list"
	msgBoolType   = "Input should be a valid boolean"
	msgIntType    = "Input should be a valid integer"
	msgObjectType = "Input should be a valid dictionary or object to extract fields from"
	msgDictType   = "Input should be a valid dictionary"
	msgUUID       = "Input should be a valid UUID"
	msgJSON       = "JSON decode error"
)

// newValidator returns the validator used for every request: field names are the JSON names,
// and "uuid" accepts the canonical 8-4-4-4-12 hex form in either letter case.
func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	if err := v.RegisterValidation("uuid", func(fl validator.FieldLevel) bool {
		return isUUID(fl.Field().String())
	}); err != nil {
		panic(err) // only for a restricted tag name, which "uuid" is not
	}
	if err := v.RegisterValidation("rfc3339", func(fl validator.FieldLevel) bool {
		_, err := parseTime(fl.Field().String())
		return err == nil
	}); err != nil {
		panic(err) // only for a restricted tag name, which "rfc3339" is not
	}
	return v
}

// isUUID reports whether s is a UUID in the canonical 8-4-4-4-12 hex form, in either case.
func isUUID[T string | []byte](s T) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	for i := 0; i < 36; i++ {
		if !isHex[s[i]] && i != 8 && i != 13 && i != 18 && i != 23 {
			return false
		}
	}
	return true
}

// isHex tells the hexadecimal digits, either case.
var isHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()

// bindJSON reads the request body into dst, a pointer to a struct whose json tags name the
// fields and whose validate tags constrain them. Every problem is reported in one
// ValidationError: JSON syntax, a body that is not an object, wrong types, missing fields and
// failed constraints. It also answers 415 and 413.
func (s *Server) bindJSON(c *gin.Context, dst any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeBody(s.validate, body, dst)
}

// maxPrealloc bounds what readBody allocates on the strength of a Content-Length alone.
const maxPrealloc = 64 << 10

// readBody reads a JSON request body whole, answering 415 for a body of another type and 413
// for one over maxBodyBytes.
func readBody(c *gin.Context) ([]byte, error) {
	if ct := c.GetHeader("Content-Type"); ct != "" && !isJSON(ct) {
		return nil, errUnsupportedMediaType
	}
	body, err := readAll(c.Request.Body, c.Request.ContentLength)
	if err != nil {
		return nil, bodyReadError(err)
	}
	return body, nil
}

// bodyReadError turns a failure to read the request body into its answer: 413 past
// maxBodyBytes, 408 when the body did not arrive by the request deadline (or the server's
// read timeout), 400 when the client ended it before its declared length.
func bodyReadError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return errTooLarge
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return &Error{Status: http.StatusRequestTimeout, Detail: "The request body did not arrive within the request deadline.", Err: err}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Status: http.StatusBadRequest, Detail: "The request body ended before its declared length.", Err: err}
	}
	return fmt.Errorf("read request body: %w", err)
}

// readAll is io.ReadAll for a body that announced its length n (-1: unknown), which it
// allocates at once, with one byte more so that the read that finds the end needs no room:
// a check's body is about 80 bytes, and the 512 that io.ReadAll or bytes.Buffer start with
// would be garbage made on every check.
func readAll(r io.Reader, n int64) ([]byte, error) {
	b := make([]byte, 0, min(max(n, 0), maxPrealloc)+1)
	for {
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to read more, as io.ReadAll makes it
		}
	}
}

// decodeBody is bindJSON without the HTTP.
func decodeBody(v *validator.Validate, body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return &ValidationError{[]Problem{{Loc: []any{"body"}, Msg: msgMissing, Type: "missing"}}}
	}
	// encoding/json would read invalid UTF-8 (or a lone surrogate) as U+FFFD, making distinct
	// ids one; FastAPI refuses a body it cannot decode as UTF-8 at the byte where it fails.
	if at := jsonstr.InvalidText(body); at >= 0 {
		return &ValidationError{[]Problem{{Loc: []any{"body", at}, Msg: msgJSON, Type: "json_invalid"}}}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil || dec.InputOffset() != int64(len(bytes.TrimRight(body, " \t\r\n"))) {
		return &ValidationError{[]Problem{{Loc: []any{"body", jsonErrorOffset(err, dec, body)}, Msg: msgJSON, Type: "json_invalid"}}}
	}
	t := reflect.TypeOf(dst).Elem()
	if _, ok := raw.(map[string]any); !ok {
		return &ValidationError{[]Problem{{Loc: []any{"body"}, Msg: msgObjectType, Type: "model_attributes_type"}}}
	}
	var problems []Problem
	raw = checkTypes(t, raw, []any{"body"}, &problems)
	// Every value now has its field's type (wrong ones were replaced by zero values), so this
	// cannot fail; the validator then sees every well-typed field.
	clean, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("re-encode request body: %w", err)
	}
	if err := json.Unmarshal(clean, dst); err != nil {
		return fmt.Errorf("decode request body: %w", err)
	}
	fields, _ := raw.(map[string]any)
	if err := v.Struct(dst); err != nil {
		var verrs validator.ValidationErrors
		if !errors.As(err, &verrs) {
			return fmt.Errorf("validate request body: %w", err)
		}
		typeProblems := slices.Clone(problems)
		for _, fe := range verrs {
			p := constraintProblem(fe, fields)
			if len(problems) < maxProblems && !coveredBy(p.Loc, typeProblems) {
				problems = append(problems, p)
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sortByField(t, problems)
	return &ValidationError{problems}
}

func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true // what nearly every client sends, without parsing
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// jsonErrorOffset gives the byte offset at which the body stopped being valid JSON.
func jsonErrorOffset(err error, dec *json.Decoder, body []byte) int64 {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return se.Offset
	}
	if err != nil {
		return int64(len(body))
	}
	return dec.InputOffset() // trailing data after a complete value
}

// checkTypes checks the decoded JSON value v against Go type t, appends a Problem for every
// value of the wrong type, and returns v with those values replaced by their type's zero value
// and objects cut down to the fields t declares.
func checkTypes(t reflect.Type, v any, loc []any, problems *[]Problem) any {
	if t.Kind() == reflect.Pointer {
		if v == nil {
			return nil
		}
		return checkTypes(t.Elem(), v, loc, problems)
	}
	bad := func(typ, msg string) any {
		if len(*problems) < maxProblems {
			*problems = append(*problems, Problem{Loc: slices.Clone(loc), Msg: msg, Type: typ})
		}
		return zeroJSON(t)
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return bad("string_type", msgStringType)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return bad("bool_type", msgBoolType)
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, ok := v.(json.Number)
		if !ok {
			return bad("int_type", msgIntType)
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return bad("int_type", msgIntType)
		}
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			return bad("list_type", msgListType)
		}
		for i, item := range items {
			items[i] = checkTypes(t.Elem(), item, append(loc, i), problems)
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return bad("model_attributes_type", msgObjectType)
		}
		// Only fields named exactly are kept: encoding/json would also match "USER_ID" to
		// user_id, where FastAPI ignores it as an unknown field.
		known := make(map[string]any, len(obj))
		for i := range t.NumField() {
			f := t.Field(i)
			name := jsonName(f)
			if name == "" {
				continue
			}
			fv, ok := obj[name]
			if !ok {
				continue
			}
			if items, isList := fv.([]any); isList && f.Type.Kind() == reflect.Slice {
				if max, ok := listMax(f); ok && len(items) > max {
					known[name] = tooLong(max, len(items), append(loc, name), problems)
					continue
				}
			}
			if f.Type.Kind() == reflect.Map {
				known[name] = checkDict(dictLimitsOf(f), fv, append(loc, name), problems)
				continue
			}
			known[name] = checkTypes(f.Type, fv, append(loc, name), problems)
		}
		return known
	}
	return v
}

// dictLimits bound an object of strings (a map[string]string field), as its dict tag gives
// them: `dict:"max=64,keymax=128,valuemax=1024"`; keys are never empty. The validator does not
// see such a field: its keys are arbitrary text, which its error namespaces cannot carry, so
// checkDict checks it whole and reports each problem at the key it concerns.
type dictLimits struct {
	max, keyMax, valueMax int
}

func dictLimitsOf(f reflect.StructField) dictLimits {
	var l dictLimits
	for rule := range strings.SplitSeq(f.Tag.Get("dict"), ",") {
		name, v, _ := strings.Cut(rule, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			// A mistake in a tag, which every test that decodes the type meets.
			panic(fmt.Sprintf("field %s: dict rule %q is not name=number", f.Name, rule))
		}
		switch name {
		case "max":
			l.max = n
		case "keymax":
			l.keyMax = n
		case "valuemax":
			l.valueMax = n
		default:
			panic(fmt.Sprintf("field %s: unknown dict rule %q", f.Name, rule))
		}
	}
	return l
}

// checkDict checks the decoded JSON value v as an object of strings within l, as pydantic checks
// a dict[str, str] whose keys and values are constrained strings. It reports a problem at loc
// for a value that is not an object or has too many keys (whose members then go unread, as a
// list's items do), at loc + [key, "[key]"] for a key that is empty or too long, and at
// loc + [key] for a member that is not a string or is too long. Null is taken as absent. Keys
// are checked in order, so that the problems come in the same order every time.
func checkDict(l dictLimits, v any, loc []any, problems *[]Problem) any {
	add := func(p Problem) {
		if len(*problems) < maxProblems {
			*problems = append(*problems, p)
		}
	}
	if v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		add(Problem{Loc: slices.Clone(loc), Msg: msgDictType, Type: "dict_type"})
		return nil
	}
	if len(obj) > l.max {
		add(Problem{Loc: slices.Clone(loc), Type: "too_long",
			Msg: fmt.Sprintf("Dictionary should have at most %s after validation, not %d", plural(strconv.Itoa(l.max), "item"), len(obj))})
		return map[string]any{}
	}
	out := make(map[string]any, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		at := slices.Concat(loc, []any{k})
		switch n := utf8.RuneCountInString(k); {
		case n == 0:
			add(Problem{Loc: slices.Concat(at, []any{"[key]"}), Msg: "String should have at least 1 character", Type: "string_too_short"})
		case n > l.keyMax:
			add(Problem{Loc: slices.Concat(at, []any{"[key]"}), Msg: fmt.Sprintf("String should have at most %s", plural(strconv.Itoa(l.keyMax), "character")), Type: "string_too_long"})
		}
		s, isString := obj[k].(string)
		switch {
		case !isString:
			add(Problem{Loc: at, Msg: msgStringType, Type: "string_type"})
		case utf8.RuneCountInString(s) > l.valueMax:
			add(Problem{Loc: at, Msg: fmt.Sprintf("String should have at most %s", plural(strconv.Itoa(l.valueMax), "character")), Type: "string_too_long"})
		default:
			out[k] = s
		}
	}
	return out
}

// listMax returns the most items the list field f may have (its validate tag's max, before
// any dive), and whether it has such a bound.
func listMax(f reflect.StructField) (int, bool) {
	for rule := range strings.SplitSeq(f.Tag.Get("validate"), ",") {
		if rule == "dive" {
			break
		}
		if v, ok := strings.CutPrefix(rule, "max="); ok {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// tooLong reports a list of n items where max are allowed, as pydantic does: that problem
// alone, without looking at the items, so that a body of a million wrong items costs no more
// to refuse than one of a thousand and one. The list becomes empty, whose own constraints the
// problem covers.
func tooLong(max, n int, loc []any, problems *[]Problem) any {
	if len(*problems) < maxProblems {
		*problems = append(*problems, Problem{Loc: slices.Clone(loc), Type: "too_long",
			Msg: fmt.Sprintf("List should have at most %s after validation, not %d", plural(strconv.Itoa(max), "item"), n)})
	}
	return []any{}
}

func zeroJSON(t reflect.Type) any {
	switch t.Kind() {
	case reflect.String:
		return ""
	case reflect.Bool:
		return false
	case reflect.Slice:
		return []any{}
	case reflect.Struct:
		return map[string]any{}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return json.Number("0")
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

// constraintProblem turns one validator error into the Problem pydantic would have reported.
// fields is the decoded body, to tell a missing field from an empty one.
func constraintProblem(fe validator.FieldError, fields map[string]any) Problem {
	loc := namespaceLoc(fe.Namespace())
	isList := fe.Kind() == reflect.Slice
	p := Problem{Loc: loc}
	switch fe.Tag() {
	case "required":
		if present(fields, loc[1:]) {
			if isList {
				p.Type, p.Msg = "too_short", "List should have at least 1 item after validation, not 0"
			} else {
				p.Type, p.Msg = "string_too_short", "String should have at least 1 character"
			}
		} else {
			p.Type, p.Msg = "missing", msgMissing
		}
	case "min":
		if isList {
			p.Type, p.Msg = "too_short", fmt.Sprintf("List should have at least %s after validation, not %d", plural(fe.Param(), "item"), reflect.ValueOf(fe.Value()).Len())
		} else {
			p.Type, p.Msg = "string_too_short", fmt.Sprintf("String should have at least %s", plural(fe.Param(), "character"))
		}
	case "max":
		if isList {
			p.Type, p.Msg = "too_long", fmt.Sprintf("List should have at most %s after validation, not %d", plural(fe.Param(), "item"), reflect.ValueOf(fe.Value()).Len())
		} else {
			p.Type, p.Msg = "string_too_long", fmt.Sprintf("String should have at most %s", plural(fe.Param(), "character"))
		}
	case "uuid":
		p.Type, p.Msg = "uuid_parsing", msgUUID
	case "rfc3339":
		p.Type, p.Msg = "datetime_parsing", msgDatetime
	case "oneof":
		p.Type, p.Msg = "literal_error", literalMsg(strings.Fields(fe.Param()))
	default:
		p.Type, p.Msg = "value_error", "Value error, invalid value"
	}
	return p
}

// literalMsg is pydantic's message for a value outside a Literal: "Input should be 'a' or 'b'".
func literalMsg(options []string) string {
	quoted := make([]string, len(options))
	for i, o := range options {
		quoted[i] = "'" + o + "'"
	}
	if len(quoted) < 2 {
		return "Input should be " + strings.Join(quoted, "")
	}
	return "Input should be " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

func plural(n, noun string) string {
	if n == "1" {
		return n + " " + noun
	}
	return n + " " + noun + "s"
}

// namespaceLoc turns a validator namespace such as "importRequest.users[3].email" into the
// FastAPI location ["body", "users", 3, "email"].
func namespaceLoc(ns string) []any {
	loc := []any{"body"}
	_, rest, _ := strings.Cut(ns, ".")
	for part := range strings.SplitSeq(rest, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		loc = append(loc, name)
		for hasIdx {
			var num string
			num, idx, _ = strings.Cut(idx, "]")
			if n, err := strconv.Atoi(num); err == nil {
				loc = append(loc, n)
			}
			_, idx, hasIdx = strings.Cut(idx, "[")
		}
	}
	return loc
}

// present reports whether the decoded body has a value at path (field names and list indexes).
func present(v any, path []any) bool {
	for _, step := range path {
		switch key := step.(type) {
		case string:
			obj, ok := v.(map[string]any)
			if !ok {
				return false
			}
			if v, ok = obj[key]; !ok {
				return false
			}
		case int:
			items, ok := v.([]any)
			if !ok || key >= len(items) {
				return false
			}
			v = items[key]
		}
	}
	return true
}

// coveredBy reports whether loc is at or below the location of a type problem already
// reported: a value of the wrong type is not also reported as missing or too short.
func coveredBy(loc []any, problems []Problem) bool {
	for _, p := range problems {
		if len(p.Loc) <= len(loc) && slices.Equal(p.Loc, loc[:len(p.Loc)]) {
			return true
		}
	}
	return false
}

// sortByField orders problems as the fields are declared in t, then by location, as pydantic
// reports them.
func sortByField(t reflect.Type, problems []Problem) {
	order := map[string]int{}
	for i := range t.NumField() {
		order[jsonName(t.Field(i))] = i + 1
	}
	rank := func(p Problem) int {
		if len(p.Loc) < 2 {
			return 0
		}
		name, _ := p.Loc[1].(string)
		return order[name]
	}
	slices.SortStableFunc(problems, func(a, b Problem) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return compareLoc(a.Loc, b.Loc)
	})
}

func compareLoc(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ai, aInt := a[i].(int)
		bi, bInt := b[i].(int)
		if aInt && bInt && ai != bi {
			return ai - bi
		}
	}
	return len(a) - len(b)
}

// queryParam validates an optional query parameter that, when given, must be a non-empty
// string of at most maxName characters. It returns "" when the parameter is absent.
func queryParam(c *gin.Context, name string) (string, error) {
	v, ok := c.GetQuery(name)
	if !ok {
		return "", nil
	}
	switch n := len([]rune(v)); {
	case n == 0:
		return "", &ValidationError{[]Problem{{Loc: []any{"query", name}, Msg: "String should have at least 1 character", Type: "string_too_short"}}}
	case n > maxName:
		return "", &ValidationError{[]Problem{{Loc: []any{"query", name}, Msg: fmt.Sprintf("String should have at most %d characters", maxName), Type: "string_too_long"}}}
	}
	return v, nil
}
