package mcpserve

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newSlogger hands the SDK (which logs through log/slog) the host's zap
// logger. The SDK's info lines are its own bookkeeping (a session started or
// ended), so they go to debug; its errors are about one client's requests,
// not the host, so they go to warn.
func newSlogger(log *zap.Logger) *slog.Logger {
	return slog.New(&zapHandler{log: log})
}

type zapHandler struct {
	log    *zap.Logger
	prefix string // group prefix for attribute keys
}

func level(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	default:
		return zapcore.DebugLevel
	}
}

func (h *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(level(l))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	ce := h.log.Check(level(r.Level), r.Message)
	if ce == nil {
		return nil
	}
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, h.field(a))
		return true
	})
	ce.Write(fields...)
	return nil
}

func (h *zapHandler) field(a slog.Attr) zap.Field {
	return zap.Any(h.prefix+a.Key, a.Value.Resolve().Any())
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, len(attrs))
	for i, a := range attrs {
		fields[i] = h.field(a)
	}
	return &zapHandler{log: h.log.With(fields...), prefix: h.prefix}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &zapHandler{log: h.log, prefix: h.prefix + name + "."}
}
