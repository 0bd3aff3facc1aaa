package api

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/grantry/grantry/internal/scim"
	"github.com/grantry/grantry/internal/uid"
)

// net/http refuses some requests before any handler sees them — a request line and headers
// over the server's MaxHeaderBytes (431), a malformed request (400), an unknown transfer coding
// (501), an unsupported protocol version (505) — and answers them in plain text. Clients of
// Grantry read JSON, and a SCIM provider reads SCIM's error shape, so JSONErrors rewrites those
// answers as the connection writes them: net/http offers no hook for them.

// netHTTPErrorHeaders are what net/http writes between the status line and the text of an
// error of its own. Its ordinary responses never hold them so: it writes their headers sorted,
// and they carry Date and X-Request-Id.
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// JSONErrors returns ln, whose connections answer net/http's own errors with a JSON body of
// Grantry's shape, {"detail":"…"}, or SCIM's when the refused request was for /scim/v2.
func JSONErrors(ln net.Listener) net.Listener { return jsonErrorsListener{ln} }

type jsonErrorsListener struct{ net.Listener }

func (l jsonErrorsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorsConn{Conn: c, fresh: true}, nil
}

// jsonErrorsConn keeps the first bytes read of the request it is reading, which name its path,
// and rewrites net/http's plain error when it writes one.
type jsonErrorsConn struct {
	net.Conn

	mu    sync.Mutex
	head  [64]byte
	n     int  // bytes of head filled
	fresh bool // the next bytes read begin a request: nothing is written since head was filled
}

func (c *jsonErrorsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.fresh {
			c.n, c.fresh = 0, false
		}
		c.n += copy(c.head[c.n:], p[:n])
		c.mu.Unlock()
	}
	return n, err
}

func (c *jsonErrorsConn) Write(p []byte) (int, error) {
	refused := isNetHTTPError(p)
	c.mu.Lock()
	c.fresh = true
	var head string
	if refused { // rarely: the head is copied only then
		head = string(c.head[:c.n])
	}
	c.mu.Unlock()
	if refused {
		if answer, ok := rewriteNetHTTPError(p, head); ok {
			if _, err := c.Conn.Write(answer); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// isNetHTTPError reports whether p is one of net/http's plain-text errors: a status line, then
// netHTTPErrorHeaders.
func isNetHTTPError(p []byte) bool {
	line, rest, ok := bytes.Cut(p, []byte("\r\n"))
	return ok && bytes.HasPrefix(line, []byte("HTTP/1.1 ")) && bytes.HasPrefix(rest, []byte(netHTTPErrorHeaders[len("\r\n"):]))
}

// CloseWrite lets net/http half-close the connection after an error, as it does a TCP one.
func (c *jsonErrorsConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// rewriteNetHTTPError returns the JSON answer that replaces p when p is one of net/http's
// plain-text errors; head is the start of the request it refuses.
func rewriteNetHTTPError(p []byte, head string) ([]byte, bool) {
	line, rest, ok := bytes.Cut(p, []byte("\r\n"))
	if !ok || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || len(line) < len("HTTP/1.1 000") {
		return nil, false
	}
	text, isError := bytes.CutPrefix(rest, []byte(netHTTPErrorHeaders[len("\r\n"):]))
	if !isError {
		return nil, false
	}
	status, err := strconv.Atoi(string(line[len("HTTP/1.1 ") : len("HTTP/1.1 ")+3]))
	if err != nil {
		return nil, false
	}
	// The text is "431 Request Header Fields Too Large", or "400 Bad Request: <why>".
	detail := strings.TrimSpace(strings.TrimPrefix(string(text), strconv.Itoa(status)))
	if status == http.StatusRequestHeaderFieldsTooLarge {
		detail = "The request line and headers are larger than Grantry accepts."
	}
	contentType := "application/json; charset=utf-8"
	var body []byte
	if requestsSCIM(head) {
		contentType = scimContentType
		body, _ = json.Marshal(map[string]any{"schemas": []string{scim.ErrorSchema}, "status": strconv.Itoa(status), "detail": detail})
	} else {
		body, _ = json.Marshal(map[string]string{"detail": detail})
	}
	var b bytes.Buffer
	b.Write(line)
	b.WriteString("\r\nContent-Type: " + contentType + "\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nConnection: close\r\nX-Request-Id: " + uid.NewCheap() + "\r\n\r\n")
	b.Write(body)
	return b.Bytes(), true
}

// requestsSCIM reports whether the request that begins with head (or, when a read ahead of
// net/http's took its first byte, with head's rest) is for /scim/v2.
func requestsSCIM(head string) bool {
	_, target, ok := strings.Cut(head, " ")
	if !ok {
		return false
	}
	path, _, _ := strings.Cut(target, " ")
	path, _, _ = strings.Cut(path, "?")
	return path == scimBasePath || strings.HasPrefix(path, scimBasePath+"/")
}
