//go:build !subakoprobe

package runtime

import (
	"context"
	"fmt"
)

// serveExtra answers the kinds only test builds know: none here.
func (w *workerServer) serveExtra(_ context.Context, kind wireKind, _ []byte) ([]byte, error) {
	return nil, fmt.Errorf("%w: kind %d is not a request", errMalformed, kind)
}
