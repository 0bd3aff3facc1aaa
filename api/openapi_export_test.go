package api

// Route is one route the router serves: a method and a path pattern in Gin's syntax (":id").
type Route struct{ Method, Path string }

// Routes returns every route the router serves, so that the OpenAPI tests of package api_test
// can hold the document to them without the router being exported.
func (s *Server) Routes() []Route {
	rs := s.router.Routes()
	out := make([]Route, len(rs))
	for i, r := range rs {
		out[i] = Route{Method: r.Method, Path: r.Path}
	}
	return out
}
