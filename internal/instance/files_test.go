package instance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/hostmod/subakohttp"
)

// TestVolumeFilesNeverBlockOnFIFOs: a FIFO in /volume/data, named as an
// HTTP body, an HTTP output or a volume:/// link in a result. Opening a FIFO
// waits for the other end unless the host asks for O_NONBLOCK, and these
// opens go through the real confined mounts (os.Root), which must pass the
// flag on. The guard only turns a hang into a failure.
func TestVolumeFilesNeverBlockOnFIFOs(t *testing.T) {
	data := t.TempDir()
	fifo := filepath.Join(data, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := fsmount.Layout{Tmp: t.TempDir(), Data: data}.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := fsmount.Open(ms)
	if err != nil {
		t.Fatal(err)
	}
	defer mounts.Close()
	files := VolumeFiles{mounts}
	policy, err := subakohttp.NewPolicy(subakohttp.PolicyConfig{Allow: []string{"api.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	hc := subakohttp.NewCall(subakohttp.CallConfig{Policy: policy, Files: files})
	unblock := func() {
		if f, err := os.OpenFile(fifo, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
			t.Cleanup(func() { f.Close() })
		}
	}
	within := func(what string, f func() string) string {
		done := make(chan string, 1)
		go func() { done <- f() }()
		select {
		case s := <-done:
			return s
		case <-time.After(60 * time.Second):
			unblock()
			<-done
			t.Fatalf("%s blocked on a FIFO", what)
			return ""
		}
	}
	for _, doc := range []string{
		`{"method":"POST","url":"https://api.example.com/","body":{"type":"file","path":"/volume/data/fifo"}}`,
		`{"url":"https://api.example.com/","output":{"type":"file","path":"/volume/data/fifo"}}`,
	} {
		got := within("subako_http", func() string { return string(hc.Do(context.Background(), []byte(doc))) })
		if !strings.Contains(got, `"kind":"bad_path"`) {
			t.Errorf("%s: %s, want bad_path", doc, got)
		}
	}
	got := within("the result view", func() string {
		_, err := files.ResolveVolume("/volume/data/fifo")
		if err == nil {
			return "resolved"
		}
		return err.Error()
	})
	if !strings.Contains(got, "not a regular file") {
		t.Errorf("volume link to a FIFO: %s", got)
	}
}
