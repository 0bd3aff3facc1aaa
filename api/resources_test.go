package api_test

import (
	"net/http"
	"regexp"
	"testing"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

type modelBody struct {
	ID              string `json:"id"`
	ModelName       string `json:"model_name"`
	IntegrationType string `json:"integration_type"`
	SvcID           string `json:"svc_id"`
}

func TestCustomModels(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")

	empty := f.must("GET", "/llm_integration/list/", key, nil)
	jsonEqual(t, empty.Body, `{"models": [], "model": null}`)

	a := decode[struct{ Model modelBody }](t, f.must("POST", "/llm_integration/custom_model", key, map[string]string{"model_name": "llama-3"})).Model
	if !uuidRE.MatchString(a.ID) || a.SvcID != a.ID || a.ModelName != "llama-3" || a.IntegrationType != "custom" {
		t.Fatalf("created model = %+v", a)
	}
	f.clock.Advance(1)
	b := decode[struct{ Model modelBody }](t, f.must("POST", "/llm_integration/custom_model", key, map[string]string{"model_name": "  Mistral 7B  "})).Model
	if b.ModelName != "  Mistral 7B  " {
		t.Errorf("model name = %q, want it kept exactly as sent", b.ModelName)
	}

	if r := f.do("POST", "/llm_integration/custom_model", key, map[string]string{"model_name": "llama-3"}); r.Status != http.StatusConflict {
		t.Errorf("registering the same name again = %d %s, want 409", r.Status, r.Body)
	}

	list := decode[struct {
		Models []modelBody `json:"models"`
		Model  *modelBody  `json:"model"`
	}](t, f.must("GET", "/llm_integration/list/", key, nil))
	if len(list.Models) != 2 || list.Models[0] != a || list.Models[1] != b || list.Model == nil || *list.Model != b {
		t.Fatalf("list = %+v, want [a b] and model b (the latest)", list)
	}

	r := f.must("POST", "/llm_integration/remove", key, map[string]string{"svc_id": a.SvcID})
	jsonEqual(t, r.Body, `{"message":"Model deleted successfully"}`)
	if r := f.do("POST", "/llm_integration/remove", key, map[string]string{"svc_id": a.SvcID}); r.Status != http.StatusNotFound {
		t.Errorf("removing it again = %d, want 404", r.Status)
	}
	list2 := decode[struct{ Models []modelBody }](t, f.must("GET", "/llm_integration/list", key, nil))
	if len(list2.Models) != 1 || list2.Models[0] != b {
		t.Errorf("list after removal = %+v", list2.Models)
	}
	// The same name may be registered again once removed.
	f.must("POST", "/llm_integration/custom_model", key, map[string]string{"model_name": "llama-3"})
}

func TestFunctions(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	type function struct {
		ID           string `json:"id"`
		FunctionName string `json:"function_name"`
		Description  string `json:"description"`
		SvcID        string `json:"svc_id"`
	}
	jsonEqual(t, f.must("GET", "/functions/list", key, nil).Body, `{"functions": []}`)
	fn := decode[struct{ Function function }](t, f.must("POST", "/functions/create", key,
		map[string]string{"function_name": "search_web", "description": "Searches the web."})).Function
	if !uuidRE.MatchString(fn.ID) || fn.SvcID != fn.ID || fn.FunctionName != "search_web" || fn.Description != "Searches the web." {
		t.Fatalf("created function = %+v", fn)
	}
	noDesc := decode[struct{ Function function }](t, f.must("POST", "/functions/create", key, map[string]string{"function_name": "ping"})).Function
	if noDesc.Description != "" {
		t.Errorf("description without one = %q", noDesc.Description)
	}
	if r := f.do("POST", "/functions/create", key, map[string]string{"function_name": "search_web"}); r.Status != http.StatusConflict {
		t.Errorf("duplicate function = %d, want 409", r.Status)
	}
	list := decode[struct{ Functions []function }](t, f.must("GET", "/functions/list/", key, nil)).Functions
	if len(list) != 2 || list[0] != fn || list[1] != noDesc {
		t.Errorf("list = %+v", list)
	}
	jsonEqual(t, f.must("POST", "/functions/remove", key, map[string]string{"svc_id": fn.SvcID}).Body,
		`{"message":"Function deleted successfully"}`)
	if r := f.do("POST", "/functions/remove", key, map[string]string{"svc_id": fn.SvcID}); r.Status != http.StatusNotFound {
		t.Errorf("remove again = %d, want 404", r.Status)
	}
}

func TestCustomDatasets(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	created := decode[struct {
		Datasets []struct {
			DatasetName string `json:"dataset_name"`
			ID          string `json:"id"`
		} `json:"datasets"`
	}](t, f.must("POST", "/data_integration/custom", key, map[string]string{"dataset_name": "support-tickets"}))
	if len(created.Datasets) != 1 || created.Datasets[0].DatasetName != "support-tickets" || !uuidRE.MatchString(created.Datasets[0].ID) {
		t.Fatalf("created = %+v", created)
	}
	id := created.Datasets[0].ID
	jsonEqual(t, f.must("GET", "/data_integration/list/", key, nil).Body,
		`{"indexes":[{"id":"`+id+`","source":"custom","metadata":"{\"dataset_name\":\"support-tickets\"}","svc_id":"`+id+`"}]}`)
	if r := f.do("POST", "/data_integration/custom", key, map[string]string{"dataset_name": "support-tickets"}); r.Status != http.StatusConflict {
		t.Errorf("duplicate dataset = %d, want 409", r.Status)
	}
	jsonEqual(t, f.must("POST", "/data_integration/remove", key, map[string]string{"svc_id": id}).Body,
		`{"message":"Dataset deleted successfully"}`)
	jsonEqual(t, f.must("GET", "/data_integration/list", key, nil).Body, `{"indexes":[]}`)
}

// TestRemoveChecksKind: every kind shares one id space, but each remove endpoint removes only
// its own kind.
func TestRemoveChecksKind(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	model := f.model(key, "m")
	for _, path := range []string{"/functions/remove", "/data_integration/remove"} {
		if r := f.do("POST", path, key, map[string]string{"svc_id": model}); r.Status != http.StatusNotFound {
			t.Errorf("%s of a model id = %d, want 404", path, r.Status)
		}
	}
	if n := len(decode[struct{ Models []modelBody }](t, f.must("GET", "/llm_integration/list", key, nil)).Models); n != 1 {
		t.Errorf("the model is gone after removals of other kinds")
	}
	// Ids are accepted in either letter case.
	jsonEqual(t, f.must("POST", "/llm_integration/remove", key, map[string]string{"svc_id": upper(model)}).Body,
		`{"message":"Model deleted successfully"}`)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestAuthIntegrations(t *testing.T) {
	f := newFixture(t)
	_, key := f.org("acme")
	jsonEqual(t, f.must("GET", "/auth_integration/list", key, nil).Body, `{"auth_integrations": []}`)
	a := decode[struct {
		AuthIntegration struct{ ID, Name, Metadata string } `json:"auth_integration"`
	}](t, f.must("POST", "/auth_integration/create", key, map[string]string{"name": "Okta", "metadata": `{"domain":"acme.okta.com"}`})).AuthIntegration
	if !uuidRE.MatchString(a.ID) || a.Name != "Okta" || a.Metadata != `{"domain":"acme.okta.com"}` {
		t.Fatalf("created = %+v", a)
	}
	if r := f.do("POST", "/auth_integration/create", key, map[string]string{"name": "Okta"}); r.Status != http.StatusConflict {
		t.Errorf("duplicate name = %d, want 409", r.Status)
	}
	jsonEqual(t, f.must("GET", "/auth_integration/list/", key, nil).Body,
		`{"auth_integrations":[{"id":"`+a.ID+`","name":"Okta","metadata":"{\"domain\":\"acme.okta.com\"}"}]}`)
}
