package storagetest

import (
	"testing"

	"github.com/grantry/grantry/storage"
)

func testResources(t *testing.T, open opener) {
	t.Run("CreateGet", func(t *testing.T) {
		s := open(t)
		// provider returns a new copy each time, so that the suite can change one and compare
		// with another.
		provider := func() storage.Resource {
			return storage.Resource{
				OrgID: "org-1", ID: rid(1), Kind: storage.KindDataset, Source: "pinecone", Name: "docs",
				Metadata: map[string]string{"index": "docs", "environment": "us-east-1", "": "empty key"},
				// Sealed secrets are arbitrary bytes: NUL, invalid UTF-8 and a trailing zero.
				Secret:    []byte{0x00, 0xff, 0xfe, 'k', 0x80, 0x00},
				CreatedAt: at(1),
			}
		}
		function := storage.Resource{
			OrgID: "org-1", ID: rid(2), Kind: storage.KindFunction, Source: storage.SourceCustom,
			Name: "Search Web ✓", Description: "Looks things up.\nTwo lines, \"quoted\".", CreatedAt: ms(1, 1),
		}
		custom := storage.Resource{
			OrgID: "org-1", ID: rid(3), Kind: storage.KindModel, Source: storage.SourceCustom,
			Name: "gpt", Metadata: map[string]string{}, CreatedAt: at(2),
		}
		created := provider()
		for _, r := range []storage.Resource{created, function, custom} {
			createResource(t, s, r)
		}
		// A store must not keep the caller's map or slice: changing them later changes nothing.
		created.Metadata["index"], created.Secret[1] = "changed", 0

		for _, want := range []storage.Resource{provider(), function, custom} {
			got, err := s.GetResource(t.Context(), "org-1", want.ID)
			noErr(t, "GetResource", err)
			diff(t, "GetResource", want, got, equateEmpty)
		}
		got, err := s.GetResource(t.Context(), "org-1", rid(1))
		noErr(t, "GetResource", err)
		if len(got.Secret) == 0 || len(got.Metadata) == 0 {
			t.Fatalf("GetResource lost the secret or the metadata: %+v", got)
		}
		// Nor may it share what it returns between calls.
		got.Secret[0], got.Metadata["index"] = 1, "changed"
		again, err := s.GetResource(t.Context(), "org-1", rid(1))
		noErr(t, "GetResource", err)
		diff(t, "GetResource after changing a returned value", provider(), again)
	})

	t.Run("Conflict", func(t *testing.T) {
		existing := storage.Resource{
			OrgID: "org-1", ID: rid(1), Kind: storage.KindModel, Source: "openai", Name: "gpt", CreatedAt: at(0),
		}
		with := func(change func(r *storage.Resource)) storage.Resource {
			r := existing
			r.ID, r.CreatedAt = rid(2), at(1)
			change(&r)
			return r
		}
		tests := []struct {
			name string
			r    storage.Resource
			want error
		}{
			{"same kind, source and name", with(func(*storage.Resource) {}), storage.ErrConflict},
			{"same id", with(func(r *storage.Resource) { r.ID, r.Name = rid(1), "other" }), storage.ErrConflict},
			// All kinds share one id space.
			{"same id, other kind", with(func(r *storage.Resource) { r.ID, r.Kind, r.Name = rid(1), storage.KindDataset, "other" }), storage.ErrConflict},
			{"other kind", with(func(r *storage.Resource) { r.Kind = storage.KindFunction }), nil},
			{"other source", with(func(r *storage.Resource) { r.Source = storage.SourceCustom }), nil},
			{"other org", with(func(r *storage.Resource) { r.OrgID = "org-2" }), nil},
			// Names are compared exactly, as ResourceByName looks them up.
			{"name in other case", with(func(r *storage.Resource) { r.Name = "GPT" }), nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				createResource(t, s, existing)
				err := s.CreateResource(t.Context(), tt.r)
				wantErr(t, "CreateResource", err, tt.want)
				if tt.want != nil {
					// The rejected resource is not stored and the existing one is unchanged.
					if tt.r.ID != existing.ID {
						_, err := s.GetResource(t.Context(), tt.r.OrgID, tt.r.ID)
						wantErr(t, "GetResource of the rejected resource", err, storage.ErrNotFound)
					}
					list, err := s.ListResources(t.Context(), "org-1", "")
					noErr(t, "ListResources", err)
					diff(t, "ListResources after the conflict", []storage.Resource{existing}, list, equateEmpty)
					return
				}
				got, err := s.GetResource(t.Context(), tt.r.OrgID, tt.r.ID)
				noErr(t, "GetResource of the new resource", err)
				diff(t, "GetResource of the new resource", tt.r, got, equateEmpty)
				got, err = s.GetResource(t.Context(), existing.OrgID, existing.ID)
				noErr(t, "GetResource of the existing resource", err)
				diff(t, "GetResource of the existing resource", existing, got, equateEmpty)
			})
		}
	})

	t.Run("GetNotFound", func(t *testing.T) {
		s := open(t)
		createResource(t, s, model("org-1", 1, at(0)))
		theirs := createResource(t, s, model("org-2", 2, at(0)))
		_, err := s.GetResource(t.Context(), "org-1", rid(3))
		wantErr(t, "GetResource(unknown)", err, storage.ErrNotFound)
		_, err = s.GetResource(t.Context(), "org-1", theirs.ID)
		wantErr(t, "GetResource(another org's id)", err, storage.ErrNotFound)
		_, err = s.GetResource(t.Context(), "org-3", rid(1))
		wantErr(t, "GetResource(unknown org)", err, storage.ErrNotFound)
	})

	t.Run("GetResources", func(t *testing.T) {
		s := open(t)
		r1 := createResource(t, s, model("org-1", 1, at(0)))
		r2 := createResource(t, s, storage.Resource{
			OrgID: "org-1", ID: rid(2), Kind: storage.KindFunction, Source: storage.SourceCustom, Name: "f", CreatedAt: at(1),
		})
		r3 := createResource(t, s, storage.Resource{
			OrgID: "org-1", ID: rid(3), Kind: storage.KindDataset, Source: "pinecone", Name: "d",
			Metadata: map[string]string{"index": "d"}, Secret: []byte("sealed"), CreatedAt: at(2),
		})
		theirs := createResource(t, s, model("org-2", 9, at(0)))

		tests := []struct {
			name string
			ids  []string
			want []storage.Resource
		}{
			{"order of ids, not of creation", []string{r3.ID, r1.ID, r2.ID}, []storage.Resource{r3, r1, r2}},
			{"unknown and foreign ids left out", []string{rid(7), r2.ID, theirs.ID, r1.ID}, []storage.Resource{r2, r1}},
			{"duplicates once, at the first place", []string{r2.ID, r3.ID, r2.ID, r3.ID, r1.ID}, []storage.Resource{r2, r3, r1}},
			{"nothing known", []string{rid(7), theirs.ID}, nil},
			{"no ids", nil, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.GetResources(t.Context(), "org-1", tt.ids)
				noErr(t, "GetResources", err)
				diff(t, "GetResources", tt.want, got, equateEmpty)
			})
		}
	})

	t.Run("ResourceByName", func(t *testing.T) {
		s := open(t)
		want := createResource(t, s, storage.Resource{
			OrgID: "org-1", ID: rid(1), Kind: storage.KindModel, Source: "openai", Name: "gpt",
			Metadata: map[string]string{"environment": "prod"}, Secret: []byte{1, 2}, CreatedAt: at(0),
		})
		createResource(t, s, storage.Resource{
			OrgID: "org-2", ID: rid(2), Kind: storage.KindModel, Source: "openai", Name: "other", CreatedAt: at(0),
		})
		got, err := s.ResourceByName(t.Context(), "org-1", storage.KindModel, "openai", "gpt")
		noErr(t, "ResourceByName", err)
		diff(t, "ResourceByName", want, got, equateEmpty)

		tests := []struct {
			desc         string
			org          string
			kind         storage.Kind
			source, name string
		}{
			{"other kind", "org-1", storage.KindFunction, "openai", "gpt"},
			{"other source", "org-1", storage.KindModel, storage.SourceCustom, "gpt"},
			{"other name", "org-1", storage.KindModel, "openai", "gpt-4"},
			{"name in other case", "org-1", storage.KindModel, "openai", "GPT"},
			{"other org", "org-2", storage.KindModel, "openai", "gpt"},
			{"another org's resource", "org-1", storage.KindModel, "openai", "other"},
		}
		for _, tt := range tests {
			_, err := s.ResourceByName(t.Context(), tt.org, tt.kind, tt.source, tt.name)
			wantErr(t, "ResourceByName("+tt.desc+")", err, storage.ErrNotFound)
		}
	})

	t.Run("List", func(t *testing.T) {
		s := open(t)
		res := func(n int, kind storage.Kind, created string) storage.Resource {
			return storage.Resource{OrgID: "org-1", ID: rid(n), Kind: kind, Source: storage.SourceCustom, Name: created}
		}
		// Created out of order; ties on CreatedAt are broken by ID, and one millisecond counts.
		m3 := res(3, storage.KindModel, "m3")
		m3.CreatedAt = at(1)
		f1 := res(1, storage.KindFunction, "f1")
		f1.CreatedAt = at(1)
		m1 := res(4, storage.KindModel, "m1")
		m1.CreatedAt = at(0)
		m2 := res(2, storage.KindModel, "m2")
		m2.CreatedAt = ms(0, 1)
		m4 := res(5, storage.KindModel, "m4")
		m4.CreatedAt = at(2)
		f2 := res(6, storage.KindFunction, "f2")
		f2.CreatedAt = at(0)
		for _, r := range []storage.Resource{m3, f1, m1, m2, m4, f2} {
			createResource(t, s, r)
		}
		createResource(t, s, model("org-2", 9, at(0)))

		tests := []struct {
			org  string
			kind storage.Kind
			want []storage.Resource
		}{
			{"org-1", storage.KindModel, []storage.Resource{m1, m2, m3, m4}},
			{"org-1", storage.KindFunction, []storage.Resource{f2, f1}},
			{"org-1", storage.KindDataset, nil},
			{"org-1", "", []storage.Resource{m1, f2, m2, f1, m3, m4}},
			{"org-3", "", nil},
		}
		for _, tt := range tests {
			got, err := s.ListResources(t.Context(), tt.org, tt.kind)
			noErr(t, "ListResources", err)
			diff(t, "ListResources("+tt.org+", "+string(tt.kind)+")", tt.want, got, equateEmpty)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := open(t)
		withUsers(t, s, "org-1", at(0), "u-1", "u-2", "u-3")
		ra := createResource(t, s, model("org-1", 1, at(1)))
		rb := createResource(t, s, model("org-1", 2, at(1)))
		grant(t, s, "org-1", "u-1", ra.ID, at(2))
		g1b := grant(t, s, "org-1", "u-1", rb.ID, at(3))
		grant(t, s, "org-1", "u-2", ra.ID, at(2))
		g3b := grant(t, s, "org-1", "u-3", rb.ID, at(2))

		noErr(t, "DeleteResource", s.DeleteResource(t.Context(), "org-1", ra.ID))
		_, err := s.GetResource(t.Context(), "org-1", ra.ID)
		wantErr(t, "GetResource of the deleted resource", err, storage.ErrNotFound)
		_, err = s.ResourceByName(t.Context(), "org-1", ra.Kind, ra.Source, ra.Name)
		wantErr(t, "ResourceByName of the deleted resource", err, storage.ErrNotFound)
		got, err := s.GetResources(t.Context(), "org-1", []string{ra.ID, rb.ID})
		noErr(t, "GetResources", err)
		diff(t, "GetResources", []storage.Resource{rb}, got, equateEmpty)
		checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-1": {g1b}, "u-2": nil, "u-3": {g3b}}, []storage.Grant{g1b, g3b})
		wantErr(t, "DeleteResource again", s.DeleteResource(t.Context(), "org-1", ra.ID), storage.ErrNotFound)

		// The name and the id are free again, and no old grant comes back with them.
		createResource(t, s, ra)
		checkGrants(t, s, "org-1", map[string][]storage.Grant{"u-1": {g1b}, "u-2": nil, "u-3": {g3b}}, []storage.Grant{g1b, g3b})
	})

	t.Run("DeleteNotFound", func(t *testing.T) {
		s := open(t)
		mine := createResource(t, s, model("org-1", 1, at(0)))
		theirs := createResource(t, s, model("org-2", 2, at(0)))
		withUsers(t, s, "org-2", at(0), "u-1")
		g := grant(t, s, "org-2", "u-1", theirs.ID, at(1))

		wantErr(t, "DeleteResource(unknown)", s.DeleteResource(t.Context(), "org-1", rid(3)), storage.ErrNotFound)
		wantErr(t, "DeleteResource(another org's id)", s.DeleteResource(t.Context(), "org-1", theirs.ID), storage.ErrNotFound)
		for _, want := range []storage.Resource{mine, theirs} {
			got, err := s.GetResource(t.Context(), want.OrgID, want.ID)
			noErr(t, "GetResource after a failed delete", err)
			diff(t, "GetResource after a failed delete", want, got, equateEmpty)
		}
		checkGrants(t, s, "org-2", map[string][]storage.Grant{"u-1": {g}}, []storage.Grant{g})
	})
}

func testAuthIntegrations(t *testing.T, open opener) {
	t.Run("CreateGet", func(t *testing.T) {
		s := open(t)
		want := storage.AuthIntegration{
			OrgID: "org-1", ID: "int-1", Name: "Okta", Metadata: `{"domain":"acme.okta.com"}`, Type: "okta", CreatedAt: at(1),
		}
		noErr(t, "CreateAuthIntegration", s.CreateAuthIntegration(t.Context(), want))
		got, err := s.GetAuthIntegration(t.Context(), "org-1", "int-1")
		noErr(t, "GetAuthIntegration", err)
		diff(t, "GetAuthIntegration", want, got)
	})

	t.Run("Conflict", func(t *testing.T) {
		tests := []struct {
			name string
			a    storage.AuthIntegration
			want error
		}{
			{"same name", storage.AuthIntegration{OrgID: "org-1", ID: "int-2", Name: "okta", Type: "import", CreatedAt: at(1)}, storage.ErrConflict},
			{"same id", storage.AuthIntegration{OrgID: "org-1", ID: "int-1", Name: "other", Type: "import", CreatedAt: at(1)}, storage.ErrConflict},
			{"same name, other org", storage.AuthIntegration{OrgID: "org-2", ID: "int-2", Name: "okta", Type: "import", CreatedAt: at(1)}, nil},
			{"other name", storage.AuthIntegration{OrgID: "org-1", ID: "int-2", Name: "okta-2", Type: "import", CreatedAt: at(1)}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				first := createIntegration(t, s, "org-1", "int-1", "okta", at(0))
				wantErr(t, "CreateAuthIntegration", s.CreateAuthIntegration(t.Context(), tt.a), tt.want)
				if tt.want != nil {
					list, err := s.ListAuthIntegrations(t.Context(), "org-1")
					noErr(t, "ListAuthIntegrations", err)
					diff(t, "ListAuthIntegrations after the conflict", []storage.AuthIntegration{first}, list)
					return
				}
				got, err := s.GetAuthIntegration(t.Context(), tt.a.OrgID, tt.a.ID)
				noErr(t, "GetAuthIntegration of the new integration", err)
				diff(t, "GetAuthIntegration of the new integration", tt.a, got)
				got, err = s.GetAuthIntegration(t.Context(), first.OrgID, first.ID)
				noErr(t, "GetAuthIntegration of the first integration", err)
				diff(t, "GetAuthIntegration of the first integration", first, got)
			})
		}
	})

	t.Run("GetNotFound", func(t *testing.T) {
		s := open(t)
		createIntegration(t, s, "org-1", "int-1", "okta", at(0))
		createIntegration(t, s, "org-2", "int-2", "okta", at(0))
		_, err := s.GetAuthIntegration(t.Context(), "org-1", "int-2")
		wantErr(t, "GetAuthIntegration(another org's id)", err, storage.ErrNotFound)
		_, err = s.GetAuthIntegration(t.Context(), "org-1", "int-3")
		wantErr(t, "GetAuthIntegration(unknown)", err, storage.ErrNotFound)
	})

	t.Run("List", func(t *testing.T) {
		s := open(t)
		c := createIntegration(t, s, "org-1", "int-c", "c", at(1))
		a := createIntegration(t, s, "org-1", "int-a", "a", at(2))
		b := createIntegration(t, s, "org-1", "int-b", "b", at(1))
		d := createIntegration(t, s, "org-1", "int-d", "d", ms(0, 1))
		createIntegration(t, s, "org-2", "int-e", "e", at(0))
		got, err := s.ListAuthIntegrations(t.Context(), "org-1")
		noErr(t, "ListAuthIntegrations", err)
		diff(t, "ListAuthIntegrations", []storage.AuthIntegration{d, b, c, a}, got)
		got, err = s.ListAuthIntegrations(t.Context(), "org-3")
		noErr(t, "ListAuthIntegrations(unknown org)", err)
		diff(t, "ListAuthIntegrations(unknown org)", []storage.AuthIntegration(nil), got, equateEmpty)
	})
}
