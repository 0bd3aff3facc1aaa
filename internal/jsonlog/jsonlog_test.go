package jsonlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"
)

// both writes r with a Handler and with slog.JSONHandler, and returns the two lines.
func both(t testing.TB, msg string, level slog.Level, when time.Time, attrs ...slog.Attr) (got, want string) {
	t.Helper()
	var g, w bytes.Buffer
	for _, x := range []struct {
		h   slog.Handler
		out *bytes.Buffer
	}{{New(&g, nil), &g}, {slog.NewJSONHandler(&w, nil), &w}} {
		r := slog.NewRecord(when, level, msg, 0)
		r.AddAttrs(attrs...)
		if err := x.h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return g.String(), w.String()
}

type marshals struct{ A int }

func (m marshals) MarshalJSON() ([]byte, error) { return []byte(`{"a":1}`), nil }

type errMarshals struct{}

func (errMarshals) Error() string                { return "plain" }
func (errMarshals) MarshalJSON() ([]byte, error) { return []byte(`"marshalled"`), nil }

func TestWritesWhatJSONHandlerWrites(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 30, 0, 123456789, time.UTC)
	tests := []struct {
		name  string
		msg   string
		level slog.Level
		when  time.Time
		attrs []slog.Attr
	}{
		{"access line", "request", slog.LevelInfo, time.Now(), []slog.Attr{
			slog.String("request_id", "5f0c8a1e-1234-4bcd-8123-0123456789ab"), slog.String("method", "POST"),
			slog.String("route", "/provisions/can_user_access"), slog.Int("status", 200),
			slog.Float64("duration_ms", 0.412), slog.String("org_id", "9f6067c4-caa7-419a-9c89-39024892e324")}},
		{"no time", "m", slog.LevelWarn, time.Time{}, nil},
		{"other zone", "m", slog.LevelError, now.In(time.FixedZone("x", -7*3600+1800)), nil},
		{"levels between", "m", slog.LevelInfo + 2, now, nil},
		{"debug+1", "m", slog.LevelDebug + 1, now, nil},
		{"escapes", "a\"b\\c\nd\re\tf\x00g\x1f<>&\u2028\u2029\xff\xfeé日本", slog.LevelInfo, now, []slog.Attr{
			slog.String("k\"\n\u2028", "v\x7f\xc3"), slog.String("html", "<script>&amp;</script>")}},
		{"numbers", "m", slog.LevelInfo, now, []slog.Attr{
			slog.Int64("min", math.MinInt64), slog.Uint64("max", math.MaxUint64), slog.Bool("t", true), slog.Bool("f", false),
			slog.Duration("d", 1500*time.Millisecond), slog.Duration("neg", -time.Nanosecond)}},
		{"floats", "m", slog.LevelInfo, now, []slog.Attr{
			slog.Float64("zero", 0), slog.Float64("negzero", math.Copysign(0, -1)), slog.Float64("small", 1e-7),
			slog.Float64("edge", 1e-6), slog.Float64("big", 1e21), slog.Float64("below", 999999999999999999999.0),
			slog.Float64("e-", 1.5e-9), slog.Float64("e+", 2.5e300), slog.Float64("third", 1.0/3), slog.Float64("neg", -12.75),
			slog.Float64("max", math.MaxFloat64), slog.Float64("tiny", math.SmallestNonzeroFloat64)}},
		{"times", "m", slog.LevelInfo, now, []slog.Attr{slog.Time("t", now), slog.Time("zero", time.Time{}), slog.Time("local", now.Local())}},
		{"error", "m", slog.LevelError, now, []slog.Attr{slog.Any("error", errors.New("bad \"thing\"\n"))}},
		// What only slog.JSONHandler writes: the Handler hands it over.
		{"marshalled error", "m", slog.LevelInfo, now, []slog.Attr{slog.Any("error", errMarshals{})}},
		{"nil pointer error", "m", slog.LevelInfo, now, []slog.Attr{slog.Any("error", (*nilErr)(nil))}},
		{"group", "m", slog.LevelInfo, now, []slog.Attr{slog.Group("g", slog.Int("a", 1), slog.String("b", "x")), slog.Int("after", 2)}},
		{"inlined group", "m", slog.LevelInfo, now, []slog.Attr{slog.Group("", slog.Int("a", 1))}},
		{"empty attr", "m", slog.LevelInfo, now, []slog.Attr{{}, slog.Int("a", 1)}},
		{"empty key", "m", slog.LevelInfo, now, []slog.Attr{slog.Int("", 1)}},
		{"any", "m", slog.LevelInfo, now, []slog.Attr{slog.Any("m", marshals{}), slog.Any("s", []int{1, 2}), slog.Any("nil", nil)}},
		{"NaN", "m", slog.LevelInfo, now, []slog.Attr{slog.Float64("n", math.NaN()), slog.Float64("inf", math.Inf(-1))}},
		{"year 10000", "m", slog.LevelInfo, now, []slog.Attr{slog.Time("t", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}},
		{"year 10000 record", "m", slog.LevelInfo, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{"log valuer", "m", slog.LevelInfo, now, []slog.Attr{slog.Any("v", valuer{})}},
		{"many attrs", "m", slog.LevelInfo, now, []slog.Attr{
			slog.Int("a", 1), slog.Int("b", 2), slog.Int("c", 3), slog.Int("d", 4), slog.Int("e", 5), slog.Int("f", 6), slog.Int("g", 7)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, want := both(t, tc.msg, tc.level, tc.when, tc.attrs...)
			if got != want {
				t.Errorf("Handler wrote\n%s\nslog.JSONHandler\n%s", got, want)
			}
		})
	}
}

type nilErr struct{ text string }

func (e *nilErr) Error() string { return e.text } // panics on a nil *nilErr

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved") }

func TestWithAttrsAndGroupAreJSONHandlers(t *testing.T) {
	var g, w bytes.Buffer
	for _, x := range []struct {
		l   *slog.Logger
		out *bytes.Buffer
	}{{slog.New(New(&g, nil)), &g}, {slog.New(slog.NewJSONHandler(&w, nil)), &w}} {
		x.l.With("k", "v").WithGroup("grp").Info("m", "a", 1)
		x.l.Debug("not written")
	}
	// The time differs between the two calls: compare what follows it.
	cut := func(s string) string { return s[bytes.IndexByte([]byte(s), ',')+1:] }
	if cut(g.String()) != cut(w.String()) || g.Len() == 0 {
		t.Errorf("Handler wrote\n%s\nslog.JSONHandler\n%s", g.String(), w.String())
	}
}

func FuzzWritesWhatJSONHandlerWrites(f *testing.F) {
	f.Add("request", "route", "/provisions/can_user_access", int64(200), 0.412, int64(0))
	f.Add("a\"\\\n\x00\u2028\xff", "k\t", "<&>", int64(-1), 1e-7, int64(-62135596800))
	f.Fuzz(func(t *testing.T, msg, key, value string, n int64, x float64, unix int64) {
		when := time.Unix(unix, n).UTC()
		got, want := both(t, msg, slog.Level(n%16), when, slog.String(key, value), slog.Int64("n", n),
			slog.Float64("x", x), slog.Duration("d", time.Duration(n)), slog.Time("t", when))
		if got != want {
			t.Errorf("Handler wrote\n%s\nslog.JSONHandler\n%s", got, want)
		}
	})
}

func BenchmarkAccessLine(b *testing.B) {
	attrs := []slog.Attr{
		slog.String("request_id", "5f0c8a1e-1234-4bcd-8123-0123456789ab"), slog.String("method", "POST"),
		slog.String("route", "/provisions/can_user_access"), slog.Int("status", 200),
		slog.Float64("duration_ms", 0.412), slog.String("org_id", "9f6067c4-caa7-419a-9c89-39024892e324"),
	}
	for _, h := range []struct {
		name string
		h    slog.Handler
	}{{"jsonlog", New(io.Discard, nil)}, {"slog.JSONHandler", slog.NewJSONHandler(io.Discard, nil)}} {
		l := slog.New(h.h)
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
			}
		})
	}
	// As api's access log hands it over: to the handler, without the caller's program counter.
	b.Run("jsonlog/handler", func(b *testing.B) {
		h := New(io.Discard, nil)
		b.ReportAllocs()
		for b.Loop() {
			r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
			r.AddAttrs(attrs...)
			_ = h.Handle(context.Background(), r)
		}
	})
}

func TestLevel(t *testing.T) {
	tests := []struct {
		level slog.Leveler
		want  map[slog.Level]bool
	}{
		{nil, map[slog.Level]bool{slog.LevelDebug: false, slog.LevelInfo: true, slog.LevelWarn: true}},
		{slog.LevelWarn, map[slog.Level]bool{slog.LevelInfo: false, slog.LevelWarn: true, slog.LevelError: true}},
		{slog.LevelDebug, map[slog.Level]bool{slog.LevelDebug: true, slog.LevelInfo: true}},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		log := slog.New(New(&buf, tt.level))
		for level, want := range tt.want {
			buf.Reset()
			log.Log(context.Background(), level, "hello")
			if got := buf.Len() > 0; got != want {
				t.Errorf("handler of level %v wrote a %v line: %v, want %v", tt.level, level, got, want)
			}
		}
	}
}
