// Package jsonlog is a slog.Handler that writes what slog.JSONHandler (without options)
// writes, byte for byte, in less time, for the records Grantry logs on every request: a message
// and attributes of the plain kinds. Grantry logs a line per request, so what slog.JSONHandler
// spends on a line is a noticeable part of each check's CPU. Any other record (a group, a value
// to marshal, a time it cannot write as RFC 3339), and every handler made by WithAttrs or
// WithGroup, is slog.JSONHandler's.
package jsonlog

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/grantry/grantry/internal/jsonstr"
)

// Handler writes JSON lines to a writer that is safe for concurrent use, one Write a record.
type Handler struct {
	w    io.Writer
	json *slog.JSONHandler
}

// New returns a Handler that writes to w, which must be safe for concurrent use (a
// logbuf.Writer or an *os.File is), the records of level and above (nil: info and above).
func New(w io.Writer, level slog.Leveler) *Handler {
	return &Handler{w: w, json: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})}
}

// Enabled reports what slog.JSONHandler does: the handler's level and above.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.json.Enabled(ctx, level)
}

// WithAttrs returns slog.JSONHandler's handler with attrs.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler { return h.json.WithAttrs(attrs) }

// WithGroup returns slog.JSONHandler's handler with the group.
func (h *Handler) WithGroup(name string) slog.Handler { return h.json.WithGroup(name) }

// maxKept bounds the buffers kept for reuse, so that one long line does not hold memory.
const maxKept = 16 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle writes r as one line, as slog.JSONHandler would.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	bp := buffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxKept {
			buffers.Put(bp)
		}
	}()
	line, ok := appendRecord((*bp)[:0], r)
	*bp = line
	if !ok {
		return h.json.Handle(ctx, r)
	}
	_, err := h.w.Write(line)
	return err
}

// appendRecord appends r's line, or reports that it holds what only slog.JSONHandler writes.
func appendRecord(buf []byte, r slog.Record) ([]byte, bool) {
	buf = append(buf, '{')
	if !r.Time.IsZero() {
		var ok bool
		buf = append(buf, `"time":`...)
		if buf, ok = appendTime(buf, r.Time.Round(0)); !ok {
			return buf, false
		}
		buf = append(buf, ',')
	}
	buf = append(buf, `"level":`...)
	buf = jsonstr.AppendSlog(buf, r.Level.String())
	buf = append(buf, `,"msg":`...)
	buf = jsonstr.AppendSlog(buf, r.Message)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		buf, ok = appendAttr(buf, a)
		return ok
	})
	return append(buf, "}\n"...), ok
}

// appendAttr appends ,"key":value for an attribute of a plain kind with a key.
func appendAttr(buf []byte, a slog.Attr) ([]byte, bool) {
	if a.Key == "" {
		return buf, false // elided, or a group to inline: slog.JSONHandler's rules
	}
	buf = append(buf, ',')
	buf = jsonstr.AppendSlog(buf, a.Key)
	buf = append(buf, ':')
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		return jsonstr.AppendSlog(buf, v.String()), true
	case slog.KindInt64:
		return strconv.AppendInt(buf, v.Int64(), 10), true
	case slog.KindUint64:
		return strconv.AppendUint(buf, v.Uint64(), 10), true
	case slog.KindBool:
		return strconv.AppendBool(buf, v.Bool()), true
	case slog.KindDuration:
		return strconv.AppendInt(buf, int64(v.Duration()), 10), true // as json.Marshal
	case slog.KindFloat64:
		return appendFloat(buf, v.Float64())
	case slog.KindTime:
		return appendTime(buf, v.Time())
	case slog.KindAny:
		err, isErr := v.Any().(error)
		if _, marshals := v.Any().(json.Marshaler); isErr && !marshals {
			if text, ok := errorText(err); ok {
				return jsonstr.AppendSlog(buf, text), true
			}
		}
	}
	return buf, false
}

// errorText is err.Error(), unless that panics (a nil pointer whose method does not guard
// against nil), which slog.JSONHandler recovers from and writes in its own way.
func errorText(err error) (text string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return err.Error(), true
}

// appendFloat appends f as encoding/json does, which slog.JSONHandler calls; NaN and the
// infinities, which it cannot write, are left to slog.JSONHandler.
func appendFloat(buf []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return buf, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if n := len(buf); format == 'e' && n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
		buf[n-2] = buf[n-1] // e-09 → e-9
		buf = buf[:n-1]
	}
	return buf, true
}

// appendTime appends t in RFC 3339 with nanoseconds, quoted; a year RFC 3339 cannot write is
// left to slog.JSONHandler.
func appendTime(buf []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y >= 10000 {
		return buf, false
	}
	buf = append(buf, '"')
	buf = t.AppendFormat(buf, time.RFC3339Nano)
	return append(buf, '"'), true
}
