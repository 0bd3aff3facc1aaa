package storagetest

import (
	"testing"

	"github.com/grantry/grantry/storage"
)

// providerResource returns a dataset of a vector database account with a sealed secret.
func providerResource(org string, n int, secret []byte) storage.Resource {
	return storage.Resource{
		OrgID: org, ID: rid(n), Kind: storage.KindDataset, Source: "pinecone", Name: "index-" + rid(n),
		Metadata: map[string]string{"index": "index-" + rid(n), "environment": "us-east-1"},
		Secret:   secret, CreatedAt: at(n),
	}
}

func testSecrets(t *testing.T, open opener) {
	t.Run("ReplaceSecret", func(t *testing.T) {
		s := open(t)
		r := createResource(t, s, providerResource("org-1", 1, []byte("sealed-1")))
		theirs := createResource(t, s, providerResource("org-2", 2, []byte("theirs")))

		secret, metadata := []byte{0x00, 0xff, 's', 0x00}, map[string]string{"index": "i", "host": "h.example"}
		noErr(t, "ReplaceSecret", s.ReplaceSecret(t.Context(), "org-1", r.ID, secret, metadata))
		// The store must not keep the caller's slice or map.
		secret[1], metadata["host"] = 0, "changed"

		want := r
		want.Secret, want.Metadata = []byte{0x00, 0xff, 's', 0x00}, map[string]string{"index": "i", "host": "h.example"}
		got, err := s.GetResource(t.Context(), "org-1", r.ID)
		noErr(t, "GetResource", err)
		diff(t, "resource after ReplaceSecret (only Secret and Metadata change)", want, got)
		byName, err := s.ResourceByName(t.Context(), "org-1", r.Kind, r.Source, r.Name)
		noErr(t, "ResourceByName", err)
		diff(t, "ResourceByName after ReplaceSecret", want, byName)

		tests := []struct {
			name, org, id string
		}{
			{"unknown id", "org-1", rid(9)},
			{"another organization's resource", "org-1", theirs.ID},
			{"unknown organization", "org-3", r.ID},
		}
		for _, tt := range tests {
			err := s.ReplaceSecret(t.Context(), tt.org, tt.id, []byte("x"), nil)
			wantErr(t, "ReplaceSecret("+tt.name+")", err, storage.ErrNotFound)
		}
		got, err = s.GetResource(t.Context(), "org-2", theirs.ID)
		noErr(t, "GetResource", err)
		diff(t, "another organization's resource", theirs, got)
	})

	t.Run("SwapSecret", func(t *testing.T) {
		old := []byte{0x01, 0x00, 0xfe, 'o'}
		tests := []struct {
			name      string
			org, id   string
			old       []byte
			want      error
			wantAfter []byte // the secret afterwards
		}{
			{"still old", "org-1", rid(1), old, nil, []byte("next")},
			{"changed meanwhile", "org-1", rid(1), []byte{0x01, 0x00, 0xfe, 'x'}, storage.ErrConflict, old},
			{"a prefix of it", "org-1", rid(1), old[:3], storage.ErrConflict, old},
			{"unknown id", "org-1", rid(9), old, storage.ErrNotFound, old},
			{"another organization", "org-2", rid(1), old, storage.ErrNotFound, old},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				r := createResource(t, s, providerResource("org-1", 1, old))
				err := s.SwapSecret(t.Context(), tt.org, tt.id, tt.old, []byte("next"))
				wantErr(t, "SwapSecret", err, tt.want)
				got, err := s.GetResource(t.Context(), "org-1", r.ID)
				noErr(t, "GetResource", err)
				want := r
				want.Secret = tt.wantAfter
				diff(t, "resource after SwapSecret", want, got)
			})
		}
	})

	t.Run("ResourcesWithSecrets", func(t *testing.T) {
		s := open(t)
		got, err := s.ResourcesWithSecrets(t.Context())
		noErr(t, "ResourcesWithSecrets on an empty store", err)
		diff(t, "ResourcesWithSecrets on an empty store", []storage.Resource(nil), got, equateEmpty)

		// Created out of the order the list must come in.
		b3 := createResource(t, s, providerResource("org-b", 3, []byte("b3")))
		a2 := createResource(t, s, providerResource("org-a", 2, []byte("a2")))
		createResource(t, s, model("org-a", 4, at(0)))
		a1 := createResource(t, s, providerResource("org-a", 1, []byte("a1")))
		createResource(t, s, providerResource("org-b", 5, nil))
		got, err = s.ResourcesWithSecrets(t.Context())
		noErr(t, "ResourcesWithSecrets", err)
		diff(t, "ResourcesWithSecrets", []storage.Resource{a1, a2, b3}, got)
	})
}
