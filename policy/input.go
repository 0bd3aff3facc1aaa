package policy

import "github.com/open-policy-agent/opa/v1/ast"

// Input is what one decision reads; authz.rego documents its shape. The caller fills it from
// the store, scoped to the caller's organization.
type Input struct {
	// User is nil when the organization has no user with the id asked about.
	User *User
	// ResourceIDs are the resource ids asked about, as sent.
	ResourceIDs []string
	// Resources holds those of ResourceIDs that exist in the organization.
	Resources map[string]Resource
}

// User is the part of a user the policy reads.
type User struct {
	ID     string
	Active bool
	// Grants maps the id of every resource granted to the user to its name.
	Grants map[string]string
}

// Resource is the part of a registered resource the policy reads.
type Resource struct {
	Kind string
	Name string
}

// value builds the input as an OPA value directly, which costs far less than encoding JSON and
// having OPA parse it again.
func (in Input) value() ast.Value {
	ids := make([]*ast.Term, len(in.ResourceIDs))
	for i, id := range in.ResourceIDs {
		ids[i] = ast.StringTerm(id)
	}
	resources := ast.NewObject()
	for id, r := range in.Resources {
		resources.Insert(ast.StringTerm(id), ast.ObjectTerm(
			ast.Item(ast.StringTerm("kind"), ast.StringTerm(r.Kind)),
			ast.Item(ast.StringTerm("name"), ast.StringTerm(r.Name)),
		))
	}
	obj := ast.NewObject(
		ast.Item(ast.StringTerm("resource_ids"), ast.ArrayTerm(ids...)),
		ast.Item(ast.StringTerm("resources"), ast.NewTerm(resources)),
	)
	if u := in.User; u != nil {
		grants := ast.NewObject()
		for id, name := range u.Grants {
			grants.Insert(ast.StringTerm(id), ast.ObjectTerm(ast.Item(ast.StringTerm("name"), ast.StringTerm(name))))
		}
		obj.Insert(ast.StringTerm("user"), ast.ObjectTerm(
			ast.Item(ast.StringTerm("id"), ast.StringTerm(u.ID)),
			ast.Item(ast.StringTerm("active"), ast.BooleanTerm(u.Active)),
			ast.Item(ast.StringTerm("resource_list"), ast.NewTerm(grants)),
		))
	}
	return obj
}
