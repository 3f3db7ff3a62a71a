package fsmount

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestResolvePrefixRules pins each rule of Resolve: a mount's guest path
// holds a path only as a whole component (compared with its "/": t1 does
// not hold t10), the longest mount wins whatever the order, a mount at "/"
// holds every absolute path, and the relative path loses its leading
// slashes.
func TestResolvePrefixRules(t *testing.T) {
	base := t.TempDir()
	dir := func(name string) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name   string
		mounts []string // guest paths, in preopen order
		path   string
		want   string // guest path of the mount; "" for none
		rel    string
	}{
		{"t1 does not hold t10", []string{"/v/t1"}, "/v/t10/x", "", ""},
		{"t1 does not hold t10 itself", []string{"/v/t1"}, "/v/t10", "", ""},
		{"t10 is not t1's", []string{"/v/t1", "/v/t10"}, "/v/t10/x", "/v/t10", "x"},
		{"t1 holds t1/x", []string{"/v/t10", "/v/t1"}, "/v/t1/x", "/v/t1", "x"},
		{"the mount itself", []string{"/v/t1"}, "/v/t1", "/v/t1", "."},
		{"the mount with a slash", []string{"/v/t1"}, "/v/t1/", "/v/t1", "."},
		{"leading slashes go", []string{"/v/t1"}, "/v/t1//x", "/v/t1", "x"},
		{"a parent is not held", []string{"/v/t1"}, "/v", "", ""},
		{"relative paths are not held", []string{"/v/t1"}, "v/t1/x", "", ""},
		{"longest first", []string{"/s/a", "/s"}, "/s/a/f", "/s/a", "f"},
		{"longest last", []string{"/s", "/s/a"}, "/s/a/f", "/s/a", "f"},
		{"the shorter for a sibling", []string{"/s", "/s/a"}, "/s/ab", "/s", "ab"},
		{"root holds all", []string{"/"}, "/etc/x", "/", "etc/x"},
		{"root itself", []string{"/"}, "/", "/", "."},
		{"root loses to a longer mount", []string{"/", "/v"}, "/v/x", "/v", "x"},
		{"root does not hold a relative path", []string{"/"}, "etc", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ms []Mount
			for i, g := range tt.mounts {
				ms = append(ms, Mount{Guest: g, Host: dir(strings.Repeat("m", i+1))})
			}
			s, err := Open(ms)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			i, rel, err := s.Resolve(tt.path)
			if tt.want == "" {
				if err == nil || !errors.Is(err, ErrNotMounted) {
					t.Fatalf("Resolve(%q) = %d, %q, %v; want ErrNotMounted", tt.path, i, rel, err)
				}
				return
			}
			if err != nil || s.Mounts()[i].Guest != tt.want || rel != tt.rel {
				t.Fatalf("Resolve(%q) = %d, %q, %v; want %s, %q", tt.path, i, rel, err, tt.want, tt.rel)
			}
		})
	}
}

// TestGuestPathsAreBounded: a path of PathMax bytes or more is refused
// with ENAMETOOLONG by Resolve, OpenFile and Stat before os.Root splits it
// into components (a 64 MiB path of 32M components cost gigabytes), and
// the error names only the path's head; PathMax-1 bytes are looked up.
func TestGuestPathsAreBounded(t *testing.T) {
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "fff"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(host, "ffff"), []byte("x"), 0o644)
	s, err := Open([]Mount{{Guest: GuestTmp, Host: host}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	prefix := GuestTmp + "/"                    // 12 bytes
	dots := prefix + strings.Repeat("./", 2040) // 4,092 bytes
	longest, tooLong := dots+"fff", dots+"ffff"
	if len(longest) != PathMax-1 || len(tooLong) != PathMax {
		t.Fatalf("lengths %d, %d", len(longest), len(tooLong))
	}
	if _, _, err := s.Stat(longest); err != nil {
		t.Errorf("a %d-byte path: %v", len(longest), err)
	}
	f, err := s.OpenFile(longest, os.O_RDONLY, 0)
	if err != nil {
		t.Errorf("open of a %d-byte path: %v", len(longest), err)
	} else {
		f.Close()
	}
	huge := prefix + strings.Repeat("a/", 32<<20)
	for _, p := range []string{tooLong, huge} {
		uses := map[string]func() error{
			"Resolve":  func() error { _, _, err := s.Resolve(p); return err },
			"OpenFile": func() error { _, err := s.OpenFile(p, os.O_RDONLY, 0); return err },
			"Stat":     func() error { _, _, err := s.Stat(p); return err },
		}
		for name, use := range uses {
			var err error
			alloc := allocated(func() { err = use() })
			if !errors.Is(err, syscall.ENAMETOOLONG) {
				t.Errorf("%s of %d bytes: %v, want ENAMETOOLONG", name, len(p), err)
			}
			if err != nil && len(err.Error()) > 200 {
				t.Errorf("%s of %d bytes: the error has %d bytes", name, len(p), len(err.Error()))
			}
			if alloc > 16<<10 {
				t.Errorf("%s of %d bytes: %d bytes allocated", name, len(p), alloc)
			}
		}
	}
}

// allocated runs f three times and returns the fewest bytes the Go heap
// allocated during one run. The count is the process's, so a goroutine an
// earlier test left running can add a few KiB to one run; a path copied or
// split would add megabytes to every run.
func allocated(f func()) uint64 {
	least := uint64(1<<64 - 1)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// BenchmarkLock is what the link lock costs a link or a move when no other
// call holds it: a descriptor of the mount's directory, flock, close.
func BenchmarkLock(b *testing.B) {
	s, err := Open([]Mount{{Guest: GuestData, Host: b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for b.Loop() {
		release, err := s.Lock(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
