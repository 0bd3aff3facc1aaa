// Command gatekeeper is an example of the Go client: an HTTP service whose route
// POST /models/{id}/chat serves only users whom Grantry lets use the model {id}. The user comes
// from the X-User header, as an authenticating proxy in front of it would set it.
//
//	GRANTRY_URL=http://127.0.0.1:8080 GRANTRY_API_KEY=gry_… go run ./examples/gatekeeper
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/grantry/grantry/client"
)

func main() {
	c, err := client.New(getenv("GRANTRY_URL", "http://127.0.0.1:8080"), os.Getenv("GRANTRY_API_KEY"))
	if err != nil {
		log.Fatal(err)
	}

	// A question asked directly, under a deadline of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	models, err := c.Models(ctx, "")
	cancel()
	if err != nil {
		log.Fatalf("list models: %v", err)
	}
	log.Printf("%d models registered", len(models))

	mux := http.NewServeMux()
	mux.Handle("POST /models/{id}/chat", c.Middleware(client.Gate{
		User:     func(r *http.Request) string { return r.Header.Get("X-User") },
		Resource: func(r *http.Request) string { return r.PathValue("id") },
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "model %s answers %s\n", r.PathValue("id"), r.Header.Get("X-User"))
	})))
	addr := getenv("ADDR", "127.0.0.1:8090")
	log.Printf("listening on %s", addr)
	log.Fatal(http.ListenAndServe(addr, mux))
}

func getenv(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
