package runtime

import (
	"context"
	"time"
)

// phaseLog collects the phases of one upload (UploadEvent.Phases). Load
// attaches it to its context; the steps below time themselves into it.
// An upload's steps run one after another on Load's goroutine.
type phaseLog struct{ list []Phase }

type phaseLogKey struct{}

func withPhaseLog(ctx context.Context, l *phaseLog) context.Context {
	return context.WithValue(ctx, phaseLogKey{}, l)
}

// phase starts the named phase of the upload ctx belongs to and returns
// the function that ends it; outside an upload (Validate, Open, commands)
// it records nothing.
func phase(ctx context.Context, name string) (end func()) {
	l, _ := ctx.Value(phaseLogKey{}).(*phaseLog)
	if l == nil {
		return func() {}
	}
	start := time.Now()
	return func() { l.list = append(l.list, Phase{Name: name, Start: start, Duration: time.Since(start)}) }
}
