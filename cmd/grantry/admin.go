package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/grantry/grantry/internal/config"
)

// admin runs the org, apikey and scim-token subcommands by calling the admin API of a running
// Grantry.
func admin(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	use := map[string]string{"org": orgUsage, "apikey": apikeyUsage, "scim-token": scimTokenUsage}[args[0]]
	if len(args) < 2 || isHelp(args[1]) {
		if len(args) < 2 {
			return errors.New(use)
		}
		fmt.Fprintln(stdout, use)
		return flag.ErrHelp
	}
	cmd := args[0] + " " + args[1]
	fs := newFlags(cmd)
	base := getenv("GRANTRY_URL")
	if base == "" {
		base = "http://" + config.FromEnv(getenv).Addr
	}
	fs.StringVar(&base, "url", base, "base URL of the Grantry service (GRANTRY_URL; default from GRANTRY_ADDR)")
	var scope string
	if cmd == "apikey create" {
		fs.StringVar(&scope, "scope", "", "scope of the key: admin (the default), manage or check")
	}
	rest, err := parse(fs, args[2:], use, stdout)
	if err != nil {
		return err
	}
	token := getenv("GRANTRY_ADMIN_TOKEN")
	if token == "" {
		return errors.New("set GRANTRY_ADMIN_TOKEN to the admin token of the service")
	}
	var method, path string
	var body any
	switch {
	case cmd == "org create" && len(rest) == 1:
		method, path, body = http.MethodPost, "/admin/orgs", map[string]string{"name": rest[0]}
	case cmd == "org list" && len(rest) == 0:
		method, path = http.MethodGet, "/admin/orgs"
	case cmd == "apikey create" && len(rest) == 1:
		method, path = http.MethodPost, "/admin/orgs/"+url.PathEscape(rest[0])+"/api_keys"
		if scope != "" {
			body = map[string]string{"scope": scope}
		}
	case cmd == "apikey revoke" && len(rest) == 1:
		method, path = http.MethodDelete, "/admin/api_keys/"+url.PathEscape(rest[0])
	case (cmd == "scim-token rotate" || cmd == "scim-token revoke") && len(rest) == 2:
		method, path = http.MethodPost, "/admin/orgs/"+url.PathEscape(rest[0])+"/auth_integrations/"+url.PathEscape(rest[1])+"/scim_token"
		if args[1] == "revoke" {
			method = http.MethodDelete
		}
	default:
		return fmt.Errorf("unknown or incomplete command %q\n%s", strings.Join(args, " "), use)
	}
	return call(ctx, method, strings.TrimRight(base, "/")+path, token, body, stdout)
}

// call sends one admin request and prints the JSON answer, indented.
func call(ctx context.Context, method, target, token string, body any, stdout io.Writer) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("call Grantry: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Detail any `json:"detail"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Detail != nil {
			return fmt.Errorf("%s: %v", resp.Status, e.Detail)
		}
		return fmt.Errorf("%s", resp.Status)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return fmt.Errorf("answer is not JSON: %w", err)
	}
	out.WriteByte('\n')
	_, err = out.WriteTo(stdout)
	return err
}
