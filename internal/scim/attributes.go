package scim

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The attributes a policy reads of a SCIM user: the User schema's and the Enterprise User
// extension's, under the names the schemas give them.
var (
	policyCoreAttributes       = []string{"title", "userType"}
	policyEnterpriseAttributes = []string{"department", "division", "organization", "costCenter", "employeeNumber"}
)

// errNotObject is the error for a stored document that is JSON but not an object.
var errNotObject = errors.New("the attribute document is not a JSON object")

// PolicyAttributes returns, from the attribute document Grantry stores for a SCIM user
// (storage.User.Attributes: every attribute it keeps but userName, name.givenName,
// name.familyName, externalId and active), the ones a policy reads: title and userType of the User schema, and department, division,
// organization, costCenter and employeeNumber of the Enterprise User extension, which sits
// under its URN. They are keyed by exactly those names; attributes that are absent, or whose
// value is not a string, are left out.
//
// Attribute names and the URN are matched without regard to case (RFC 7643 §2.1), though
// Grantry stores them in the schema's case. Should a document hold one name in several
// cases, the one spelt as the schema spells it wins, then the others in byte order: the same
// document always gives the same attributes.
//
// An empty document gives an empty map. One that is not a JSON object gives an empty map and
// an error: the map so that a caller that carries on builds the same input as for a user with
// no attributes, the error so that it can refuse instead, since a policy that denies on an
// attribute's value (a department) would allow a user whose document could not be read.
func PolicyAttributes(doc []byte) (map[string]string, error) {
	out := map[string]string{}
	top, err := decodeDocument(doc)
	if err != nil || top == nil {
		return out, err
	}
	for _, name := range policyCoreAttributes {
		if v, ok := firstString([]map[string]any{top}, name); ok {
			out[name] = v
		}
	}
	var exts []map[string]any
	for _, k := range namesFor(top, EnterpriseUserSchema) {
		if m, ok := top[k].(map[string]any); ok {
			exts = append(exts, m)
		}
	}
	for _, name := range policyEnterpriseAttributes {
		if v, ok := firstString(exts, name); ok {
			out[name] = v
		}
	}
	return out, nil
}

// ImportedAttributes returns the attributes an import stored for a user (storage.User.Attributes
// of a user of a plain import: a JSON object of strings), keyed exactly as the import gave
// them; a member whose value is not a string is left out. An empty document gives an empty
// map; one that is not a JSON object gives an empty map and an error, for the reason
// PolicyAttributes gives.
func ImportedAttributes(doc []byte) (map[string]string, error) {
	out := map[string]string{}
	top, err := decodeDocument(doc)
	if err != nil {
		return out, err
	}
	for k, v := range top {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out, nil
}

// decodeDocument decodes a stored attribute document: nil for an empty one, an error for one
// that is not a JSON object. Text that is not UTF-8 is read as U+FFFD, as encoding/json reads
// it: Grantry writes these documents itself, from requests it refused such text in.
func decodeDocument(doc []byte) (map[string]any, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("decode the attribute document: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errNotObject
	}
	return m, nil
}

// firstString returns the string value of the attribute name in the first of objs that has
// one, trying in each the keys namesFor gives.
func firstString(objs []map[string]any, name string) (string, bool) {
	for _, m := range objs {
		for _, k := range namesFor(m, name) {
			if s, ok := m[k].(string); ok {
				return s, true
			}
		}
	}
	return "", false
}

// namesFor returns the keys of m that name name, ignoring case: name itself first if m has it,
// then the others in byte order.
func namesFor(m map[string]any, name string) []string {
	var keys []string
	if _, ok := m[name]; ok {
		keys = append(keys, name)
	}
	var others []string
	for k := range m {
		if k != name && strings.EqualFold(k, name) {
			others = append(others, k)
		}
	}
	slices.Sort(others)
	return append(keys, others...)
}
