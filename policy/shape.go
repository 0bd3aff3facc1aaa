package policy

import "time"

// Shape is all that allow of the shipped policy reads of a question about one resource, asked
// about a user who holds a grant of it of their own that never expires: whether the user is
// active, and whether the organization has the resource (with, to be safe, the resource as it
// has it). Of such a question the policy reads nothing else: not the user's id, their other
// grants, their groups (the grant of their own already holds), nor the time (the grant never
// expires). So two questions of one shape are decided alike, and what the policy answered
// to one answers the other (TestShapeDecidesAlike holds the policy to that).
//
// This is what makes a question about a user not in memory cheap: most such questions, of a
// large organization's users asked about once each in a while, have one of a few shapes per
// resource, and each shape needs evaluating once per policy revision.
type Shape struct {
	ID     string // the resource asked about
	Active bool   // the user's
	Found  bool   // whether the organization has the resource
	Kind   string // the resource's, when Found
	Name   string // the resource's, when Found
}

// ShapeOf returns the shape of in, a question for allow, and whether it has one: only with the
// shipped policy (DecidesPerUser), of a question about one resource, of a user who holds a
// grant of it of their own that never expires.
func (e *Engine) ShapeOf(in Input) (Shape, bool) {
	if !e.DecidesPerUser() || len(in.ResourceIDs) != 1 || in.User == nil {
		return Shape{}, false
	}
	id := in.ResourceIDs[0]
	g, own := in.User.Grants[id]
	r, found := in.Resources[id]
	return GrantShape(id, in.User.Active, own, g.ExpiresAt, r, found)
}

// GrantShape is ShapeOf for a caller that has the question's parts without an Input: the
// shape of a question about the one resource id, of a user (active or not) who holds a grant
// of it of their own (own) that expires at expires (zero: never), the organization having the
// resource as r (found). As ShapeOf's, its shape holds only for a policy that DecidesPerUser.
func GrantShape(id string, active, own bool, expires time.Time, r Resource, found bool) (Shape, bool) {
	if !own || !expires.IsZero() {
		return Shape{}, false
	}
	return Shape{ID: id, Active: active, Found: found, Kind: r.Kind, Name: r.Name}, true
}
