package mcpserve

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/subako/subako-runner/runtime"
)

// DefaultWatchInterval is how often Watch looks at the package's files.
const DefaultWatchInterval = 500 * time.Millisecond

// WatchOptions configure Watch.
type WatchOptions struct {
	// Path is the package: a directory (its module.wasm and
	// subako-package.json are watched) or a bare .wasm file.
	Path string
	// Interval is the polling period; zero means DefaultWatchInterval.
	Interval time.Duration
	// Load checks and discovers the package again (runtime.Runtime.Load).
	Load func(ctx context.Context) (*runtime.Package, error)
	// Reloaded, when set, is called after each attempt: the new package's
	// tool count, or the error that kept the old package in service.
	Reloaded func(tools int, err error)
}

// Watch polls the package's files until ctx is done. When they change and
// then hold still for one more interval (so a build that is still writing
// is not loaded half-written), it loads the package again: on success it
// swaps it in (clients get notifications/tools/list_changed); on failure it
// logs every reason and keeps serving the package it had. A failed version
// is not retried until the files change again.
//
// It polls size, modification time and a SHA-256 of the content (hashed
// only when size or time moved), with no file-system notification API: a
// package is two files, and polling works the same on every system and
// inside containers.
func (s *Server) Watch(ctx context.Context, o WatchOptions) error {
	if o.Load == nil {
		return errors.New("mcpserve: WatchOptions.Load is required")
	}
	interval := o.Interval
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	w := &watcher{files: watchedFiles(o.Path), hashes: map[string]fileState{}}
	seen := w.fingerprint()
	tried := seen
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := w.fingerprint()
		if now != seen {
			seen = now // changed: wait until it holds still
			continue
		}
		if now == tried {
			continue
		}
		tried = now
		pkg, err := o.Load(ctx)
		if ctx.Err() != nil {
			if pkg != nil {
				pkg.Close(context.WithoutCancel(ctx))
			}
			return nil
		}
		if err != nil {
			s.log.Warn("the changed package was not loaded; still serving the previous version", zap.String("package", o.Path), zap.String("why", describe(err)))
			if o.Reloaded != nil {
				o.Reloaded(0, err)
			}
			continue
		}
		s.Swap(ctx, pkg)
		s.log.Info("package reloaded", zap.String("package", o.Path), zap.Int("tools", len(pkg.Tools())))
		if o.Reloaded != nil {
			o.Reloaded(len(pkg.Tools()), nil)
		}
	}
}

// describe spells out every reason of a rejection, which the error's own
// text only summarises.
func describe(err error) string {
	var rej *runtime.RejectedError
	if !errors.As(err, &rej) {
		return err.Error()
	}
	var parts []string
	for _, r := range rej.Rejections {
		parts = append(parts, r.Code+": "+r.Message)
	}
	if rej.Crash != nil {
		parts = append(parts, fmt.Sprintf("discovery crashed (%s): %s; last stderr: %s", rej.Crash.Reason, rej.Crash.Message, strings.TrimSpace(rej.Crash.Stderr)))
	}
	return strings.Join(parts, "; ")
}

func watchedFiles(path string) []string {
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		return []string{path}
	}
	return []string{filepath.Join(path, runtime.ModuleFile), filepath.Join(path, runtime.ManifestFile)}
}

type watcher struct {
	files  []string
	hashes map[string]fileState
}

type fileState struct {
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
}

// fingerprint is one string for the state of every watched file; an absent
// or unreadable file has its own state, so its return is a change too.
func (w *watcher) fingerprint() string {
	var b strings.Builder
	for _, f := range w.files {
		info, err := os.Stat(f)
		if err != nil {
			fmt.Fprintf(&b, "%s:absent;", f)
			delete(w.hashes, f)
			continue
		}
		st, ok := w.hashes[f]
		if !ok || st.size != info.Size() || !st.mtime.Equal(info.ModTime()) {
			st = fileState{size: info.Size(), mtime: info.ModTime()}
			if sum, err := hashFile(f); err == nil {
				st.sum = sum
			}
			w.hashes[f] = st
		}
		// The time only decides when to hash again: a touched file with
		// the same bytes is the same package.
		fmt.Fprintf(&b, "%s:%d:%x;", f, st.size, st.sum)
	}
	return b.String()
}

func hashFile(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
