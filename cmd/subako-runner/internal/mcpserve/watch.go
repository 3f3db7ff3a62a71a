package mcpserve

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

	// Build, when set, is a shell command (sh -c) that makes the package
	// from its sources: Watch runs it in BuildDir when the files under
	// BuildDir change and hold still for one interval, then loads the
	// package the build wrote, as for any change of its files. The
	// package's own files, hidden directories (.git), node_modules and
	// target are not sources, and what the build itself writes does not
	// set off another build.
	Build    string
	BuildDir string
	// BuildOutput receives a line per build and the build's own output;
	// nil discards them.
	BuildOutput io.Writer
	// Built, when set, is called after each build with its error.
	Built func(err error)
	// Watching, when set, is called once Watch has taken the files' first
	// fingerprints: a change made after it returns is seen.
	Watching func()
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
	var src *sourceWatcher
	var srcSeen, srcBuilt string
	if o.Build != "" {
		src = newSourceWatcher(o.BuildDir, o.Path)
		srcSeen = src.fingerprint()
		srcBuilt = srcSeen
	}
	if o.Watching != nil {
		o.Watching()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if src != nil {
			now := src.fingerprint()
			if now != srcSeen {
				srcSeen = now // changed: wait until it holds still
				continue
			}
			if now != srcBuilt {
				err := s.build(ctx, o)
				if ctx.Err() != nil {
					return nil
				}
				// What the build wrote among the sources is not a change;
				// taken before Built, so that an edit made after the build
				// ended is one.
				srcSeen = src.fingerprint()
				srcBuilt = srcSeen
				if o.Built != nil {
					o.Built(err)
				}
			}
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

// build runs o.Build in o.BuildDir, its output to o.BuildOutput.
func (s *Server) build(ctx context.Context, o WatchOptions) error {
	out := o.BuildOutput
	if out == nil {
		out = io.Discard
	}
	fmt.Fprintf(out, "sources changed: running %s\n", o.Build)
	s.log.Info("building the package", zap.String("command", o.Build), zap.String("dir", o.BuildDir))
	cmd := exec.CommandContext(ctx, "sh", "-c", o.Build)
	cmd.Dir = o.BuildDir
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(out, "build failed (%v); still serving the previous version\n", err)
		s.log.Warn("the build failed; still serving the previous version", zap.String("command", o.Build), zap.Error(err))
		return fmt.Errorf("build %q: %w", o.Build, err)
	}
	return nil
}

// sourceWatcher is the state of a project's source tree: every file
// under root but the package's and those of skipped directories.
type sourceWatcher struct {
	root string
	skip string // the package (directory or file), absolute
}

// maxSourceFiles bounds the files a fingerprint looks at: a tree larger
// than this is someone's home directory, not a package's project.
const maxSourceFiles = 20000

func newSourceWatcher(root, pkg string) *sourceWatcher {
	if root == "" {
		root = "."
	}
	skip, err := filepath.Abs(pkg)
	if err != nil {
		skip = pkg
	}
	return &sourceWatcher{root: root, skip: skip}
}

// fingerprint hashes the path, size and modification time of every
// source file: a build is cheap to run for nothing (make does nothing),
// so a touched file may set one off.
func (w *sourceWatcher) fingerprint() string {
	h := sha256.New()
	n := 0
	filepath.WalkDir(w.root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if abs, err := filepath.Abs(p); err == nil && abs == w.skip {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if name := d.Name(); p != w.root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "target") {
				return filepath.SkipDir
			}
			return nil
		}
		if n++; n > maxSourceFiles {
			return filepath.SkipAll
		}
		if info, err := d.Info(); err == nil {
			fmt.Fprintf(h, "%s\x00%d\x00%d\n", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return string(h.Sum(nil))
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
