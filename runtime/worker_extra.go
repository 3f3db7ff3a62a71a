//go:build !subakoprobe

package runtime

import (
	"context"
	"fmt"

	"github.com/subako/subako-runner/internal/sandbox"
)

// serveExtra answers the kinds only test builds know: none here.
func (w *workerServer) serveExtra(_ context.Context, kind wireKind, _ []byte) ([]byte, error) {
	return nil, fmt.Errorf("%w: kind %d is not a request", errMalformed, kind)
}

// testEnvVars: no test knobs outside test builds.
func testEnvVars() []string { return nil }

// testSandboxKnobs does nothing outside test builds.
func testSandboxKnobs(*sandbox.Config) {}

// applyTestKnobs does nothing outside test builds.
func (w *workerServer) applyTestKnobs() {}
