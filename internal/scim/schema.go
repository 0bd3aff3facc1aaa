// Package scim holds the protocol side of SCIM 2.0 (RFC 7643 and RFC 7644) that Grantry serves
// to identity providers: the schemas of the resources it keeps, the filter language, PATCH
// operations, and attribute projection. It works on resources as decoded JSON objects
// (map[string]any) and knows nothing of HTTP or of the store.
//
// It is written for the providers that really call Grantry, Okta and Microsoft Entra ID, whose
// requests stray from the RFC in known ways: capitalised operation names ("Replace"), booleans
// sent as strings ("False"), path-less values whose keys are attribute paths, removal of
// members by value list, and a plain string where a complex attribute is expected (the
// enterprise manager). Every such leniency is documented where it is applied.
package scim

import (
	"slices"
	"strings"
)

// The URNs of the schemas and messages Grantry speaks.
const (
	UserSchema                  = "urn:ietf:params:scim:schemas:core:2.0:User"
	EnterpriseUserSchema        = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
	GroupSchema                 = "urn:ietf:params:scim:schemas:core:2.0:Group"
	ListResponseSchema          = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	PatchOpSchema               = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	ErrorSchema                 = "urn:ietf:params:scim:api:messages:2.0:Error"
	ServiceProviderConfigSchema = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	ResourceTypeSchema          = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	SchemaSchema                = "urn:ietf:params:scim:schemas:core:2.0:Schema"
)

// Attribute types of RFC 7643 §2.3 that Grantry's schemas use.
const (
	TypeString    = "string"
	TypeBoolean   = "boolean"
	TypeComplex   = "complex"
	TypeReference = "reference"
	TypeDateTime  = "dateTime"
	TypeBinary    = "binary"
)

// Mutability values of RFC 7643 §7.
const (
	ReadOnly  = "readOnly"
	ReadWrite = "readWrite"
	Immutable = "immutable"
	WriteOnly = "writeOnly"
)

// Attribute describes one attribute of a schema, as RFC 7643 §7 serves it from /Schemas.
type Attribute struct {
	Name            string       `json:"name"`
	Type            string       `json:"type"`
	SubAttributes   []*Attribute `json:"subAttributes,omitempty"`
	MultiValued     bool         `json:"multiValued"`
	Description     string       `json:"description"`
	Required        bool         `json:"required"`
	CanonicalValues []string     `json:"canonicalValues,omitempty"`
	CaseExact       bool         `json:"caseExact"`
	Mutability      string       `json:"mutability"`
	Returned        string       `json:"returned"`
	Uniqueness      string       `json:"uniqueness"`
	ReferenceTypes  []string     `json:"referenceTypes,omitempty"`
}

// Sub returns the sub-attribute named name, ignoring letter case as RFC 7643 §2.1 asks of
// attribute names, or nil.
func (a *Attribute) Sub(name string) *Attribute { return find(a.SubAttributes, name) }

func find(attrs []*Attribute, name string) *Attribute {
	for _, a := range attrs {
		if strings.EqualFold(a.Name, name) {
			return a
		}
	}
	return nil
}

// Schema is one schema: a URN and its attributes.
type Schema struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Attributes  []*Attribute `json:"attributes"`
}

// Attr returns the schema's attribute named name, ignoring letter case, or nil.
func (s *Schema) Attr(name string) *Attribute { return find(s.Attributes, name) }

// ResourceType is a kind of resource: its endpoint, its core schema and its extensions.
type ResourceType struct {
	Name        string
	Endpoint    string
	Description string
	Schema      *Schema
	Extensions  []*Schema
}

// Extension returns the extension schema with this URN, ignoring letter case, or nil.
func (rt *ResourceType) Extension(urn string) *Schema {
	for _, s := range rt.Extensions {
		if strings.EqualFold(s.ID, urn) {
			return s
		}
	}
	return nil
}

// commonAttributes are the attributes of every resource (RFC 7643 §3.1). They belong to no
// schema, so /Schemas does not list them, but filters, paths and projections name them.
var commonAttributes = []*Attribute{
	attr("id", TypeString, readOnly, caseExact, returnedAlways, uniqueServer),
	attr("externalId", TypeString, caseExact),
	attr("meta", TypeComplex, readOnly, subs(
		attr("resourceType", TypeString, readOnly, caseExact),
		attr("created", TypeDateTime, readOnly),
		attr("lastModified", TypeDateTime, readOnly),
		attr("location", TypeReference, readOnly, caseExact, refs("uri")),
		attr("version", TypeString, readOnly, caseExact),
	)),
}

// lookup finds a top-level attribute of the resource type by its (optional) schema URN and
// name: the common attributes and the core schema's when urn is empty or the core schema's,
// an extension's when urn names it. A name without a URN that the core schema lacks is looked
// for in the extensions, whose attribute names the core schema's never share: Entra ID names
// the enterprise manager so (`"path":"manager"`, `manager eq "…"`), where RFC 7644 §3.10 asks
// for the extension's URN. It returns nil for an attribute Grantry does not keep.
func (rt *ResourceType) lookup(urn, name string) (schema string, a *Attribute) {
	if urn == "" || strings.EqualFold(urn, rt.Schema.ID) {
		if a := find(commonAttributes, name); a != nil {
			return "", a
		}
		if a := rt.Schema.Attr(name); a != nil || urn != "" {
			return "", a
		}
		for _, ext := range rt.Extensions {
			if a := ext.Attr(name); a != nil {
				return ext.ID, a
			}
		}
		return "", nil
	}
	if ext := rt.Extension(urn); ext != nil {
		return ext.ID, ext.Attr(name)
	}
	return "", nil
}

// attrOption sets one property of an attribute definition.
type attrOption func(*Attribute)

// attr defines an attribute with the RFC's defaults: readWrite, returned by default, not
// unique, not case-exact, single-valued, optional.
func attr(name, typ string, opts ...attrOption) *Attribute {
	a := &Attribute{Name: name, Type: typ, Mutability: ReadWrite, Returned: "default", Uniqueness: "none"}
	for _, o := range opts {
		o(a)
	}
	return a
}

func multi(a *Attribute)          { a.MultiValued = true }
func required(a *Attribute)       { a.Required = true }
func caseExact(a *Attribute)      { a.CaseExact = true }
func readOnly(a *Attribute)       { a.Mutability = ReadOnly }
func immutable(a *Attribute)      { a.Mutability = Immutable }
func returnedAlways(a *Attribute) { a.Returned = "always" }
func uniqueServer(a *Attribute)   { a.Uniqueness = "server" }

// writeOnlyNever is a secret the client may send but never gets back (the password).
func writeOnlyNever(a *Attribute) { a.Mutability, a.Returned = WriteOnly, "never" }

func describe(d string) attrOption { return func(a *Attribute) { a.Description = d } }

func subs(sub ...*Attribute) attrOption { return func(a *Attribute) { a.SubAttributes = sub } }

func refs(types ...string) attrOption { return func(a *Attribute) { a.ReferenceTypes = types } }

func canonical(values ...string) attrOption {
	return func(a *Attribute) { a.CanonicalValues = values }
}

// valued are the sub-attributes shared by the plain multi-valued attributes of a User
// (emails, phoneNumbers, ims, photos, entitlements, roles, x509Certificates).
func valued(valueType string, types ...string) attrOption {
	return subs(
		attr("value", valueType),
		attr("display", TypeString),
		attr("type", TypeString, canonical(types...)),
		attr("primary", TypeBoolean),
	)
}

// userSchema is RFC 7643 §4.1's User. Grantry keeps every attribute it defines except the
// password (never stored) and groups (read-only: membership is changed through Groups).
var userSchema = &Schema{
	ID: UserSchema, Name: "User", Description: "User Account",
	Attributes: []*Attribute{
		attr("userName", TypeString, required, uniqueServer,
			describe("Unique identifier of the user within the integration; Grantry keeps it as the user's email.")),
		attr("name", TypeComplex, describe("The components of the user's real name."), subs(
			attr("formatted", TypeString),
			attr("familyName", TypeString, describe("Kept as the user's last name.")),
			attr("givenName", TypeString, describe("Kept as the user's first name.")),
			attr("middleName", TypeString),
			attr("honorificPrefix", TypeString),
			attr("honorificSuffix", TypeString),
		)),
		attr("displayName", TypeString),
		attr("nickName", TypeString),
		attr("profileUrl", TypeReference, refs("external")),
		attr("title", TypeString),
		attr("userType", TypeString),
		attr("preferredLanguage", TypeString),
		attr("locale", TypeString),
		attr("timezone", TypeString),
		attr("active", TypeBoolean, describe("False takes every access away from the user until it is true again.")),
		attr("password", TypeString, writeOnlyNever, describe("Accepted and discarded: Grantry never stores passwords.")),
		attr("emails", TypeComplex, multi, valued(TypeString, "work", "home", "other")),
		attr("phoneNumbers", TypeComplex, multi, valued(TypeString, "work", "home", "mobile", "fax", "pager", "other")),
		attr("ims", TypeComplex, multi, valued(TypeString, "aim", "gtalk", "icq", "xmpp", "msn", "skype", "qq", "yahoo")),
		attr("photos", TypeComplex, multi, valued(TypeReference, "photo", "thumbnail")),
		attr("addresses", TypeComplex, multi, canonical("work", "home", "other"), subs(
			attr("formatted", TypeString),
			attr("streetAddress", TypeString),
			attr("locality", TypeString),
			attr("region", TypeString),
			attr("postalCode", TypeString),
			attr("country", TypeString),
			attr("type", TypeString, canonical("work", "home", "other")),
			attr("primary", TypeBoolean),
		)),
		attr("groups", TypeComplex, multi, readOnly, describe("Not kept on the user: list a user's groups through /Groups."), subs(
			attr("value", TypeString, readOnly),
			attr("$ref", TypeReference, readOnly, refs("Group")),
			attr("display", TypeString, readOnly),
			attr("type", TypeString, readOnly, canonical("direct", "indirect")),
		)),
		attr("entitlements", TypeComplex, multi, valued(TypeString)),
		attr("roles", TypeComplex, multi, valued(TypeString)),
		attr("x509Certificates", TypeComplex, multi, valued(TypeBinary)),
	},
}

// enterpriseUserSchema is RFC 7643 §4.3's Enterprise User extension.
var enterpriseUserSchema = &Schema{
	ID: EnterpriseUserSchema, Name: "EnterpriseUser", Description: "Enterprise User",
	Attributes: []*Attribute{
		attr("employeeNumber", TypeString),
		attr("costCenter", TypeString),
		attr("organization", TypeString),
		attr("division", TypeString),
		attr("department", TypeString),
		attr("manager", TypeComplex, subs(
			attr("value", TypeString),
			attr("$ref", TypeReference, refs("User")),
			attr("displayName", TypeString, readOnly),
		)),
	},
}

// groupSchema is RFC 7643 §4.2's Group. A member is kept by its value (the user's id), with
// the display name the provider sent with it (Okta sends the user's login), which is given
// back as it was sent.
var groupSchema = &Schema{
	ID: GroupSchema, Name: "Group", Description: "Group",
	Attributes: []*Attribute{
		attr("displayName", TypeString, required, uniqueServer,
			describe("Unique within the integration, ignoring letter case.")),
		attr("members", TypeComplex, multi, describe("Users of the same integration; groups cannot be members."), subs(
			attr("value", TypeString, immutable, caseExact),
			attr("$ref", TypeReference, immutable, refs("User")),
			attr("type", TypeString, immutable, canonical("User")),
			attr("display", TypeString, immutable),
		)),
	},
}

// The resource types Grantry serves.
var (
	// User is the User resource type, with the Enterprise User extension.
	User = &ResourceType{
		Name: "User", Endpoint: "/Users", Description: "User Account",
		Schema: userSchema, Extensions: []*Schema{enterpriseUserSchema},
	}
	// Group is the Group resource type.
	Group = &ResourceType{Name: "Group", Endpoint: "/Groups", Description: "Group", Schema: groupSchema}
)

// ResourceTypes lists the resource types in the order /ResourceTypes shows them.
func ResourceTypes() []*ResourceType { return []*ResourceType{User, Group} }

// Schemas lists every schema in the order /Schemas shows them.
func Schemas() []*Schema { return []*Schema{userSchema, enterpriseUserSchema, groupSchema} }

// SchemaByID returns the schema with this URN (exactly as RFC 7644 §4 addresses it), or nil.
func SchemaByID(id string) *Schema {
	i := slices.IndexFunc(Schemas(), func(s *Schema) bool { return s.ID == id })
	if i < 0 {
		return nil
	}
	return Schemas()[i]
}
