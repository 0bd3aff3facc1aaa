package client

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Gate says where a request's user and resource are.
type Gate struct {
	// User returns the id of the request's user, "" when it has none (then 401).
	User func(r *http.Request) string
	// Resource returns the svc_id the request would use, "" when it names none (then 403).
	Resource func(r *http.Request) string
}

// Middleware lets a request through to next only when Grantry says its user may use its
// resource. Otherwise it answers with a JSON {"detail"}: 401 when the request names no user, 403
// when the user may not use the resource, and 503 when Grantry could not be asked (the request
// is refused, never let through).
func (c *Client) Middleware(g Gate, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := g.User(r)
		if user == "" {
			refuse(w, http.StatusUnauthorized, "The request names no user.")
			return
		}
		resource := g.Resource(r)
		if resource == "" {
			refuse(w, http.StatusForbidden, "The request names no resource.")
			return
		}
		ok, err := c.CanUserAccess(r.Context(), user, resource)
		var e *Error
		switch {
		case errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity:
			refuse(w, http.StatusForbidden, "The request names no valid resource.")
		case err != nil:
			refuse(w, http.StatusServiceUnavailable, "Access could not be checked; try again shortly.")
		case !ok:
			refuse(w, http.StatusForbidden, "This user may not use this resource.")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func refuse(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"detail": detail})
}
