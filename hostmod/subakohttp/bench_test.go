package subakohttp

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako-runner/limits"
)

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// BenchmarkDownloadToFile saves a large body to a file and reports the peak
// heap in use while it streams: it must stay flat (a few chunks), not grow
// with the body.
//
//	go test ./hostmod/subakohttp -run XXX -bench DownloadToFile -benchtime 1x
func BenchmarkDownloadToFile(b *testing.B) {
	for _, size := range []int64{256 * limits.MiB, limits.GiB} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			srv := newBenchServer(b, size)
			files := &dirFiles{root: b.TempDir()}
			for _, d := range []string{"tmp", "data"} {
				if err := mkdir(files.root, d); err != nil {
					b.Fatal(err)
				}
			}
			p, err := NewPolicy(PolicyConfig{Allow: []string{srv}, AllowPrivate: loopback()})
			if err != nil {
				b.Fatal(err)
			}
			doc := []byte(`{"url":"http://` + srv + `/","output":{"type":"file","path":"/volume/tmp/big.bin"}}`)
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			var peak atomic.Uint64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				var m runtime.MemStats
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}()
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := NewCall(CallConfig{Policy: p, Files: files, Budget: limits.NewCallBudget(limits.Limits{WriteBudget: 2 * limits.GiB})})
				r := c.Do(b.Context(), doc)
				want := `"bytes":` + strconv.FormatInt(size, 10) + `}}}`
				if len(r) < len(want) || string(r[len(r)-len(want):]) != want {
					b.Fatalf("response %s", r)
				}
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			growth := int64(peak.Load()) - int64(base.HeapInuse)
			b.ReportMetric(float64(peak.Load())/float64(limits.MiB), "peak-heap-MiB")
			b.ReportMetric(float64(growth)/float64(limits.MiB), "heap-growth-MiB")
			if rss, ok := peakRSS(); ok {
				b.ReportMetric(float64(rss)/float64(limits.MiB), "peak-rss-MiB")
			}
			if growth > 64*limits.MiB {
				b.Fatalf("heap grew by %d MiB while streaming %d MiB", growth>>20, size>>20)
			}
		})
	}
}

func newBenchServer(b *testing.B, size int64) string {
	b.Helper()
	return newServerTB(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		io.CopyN(w, zeros{}, size)
	})
}

// peakRSS is the process's peak resident set (Linux VmHWM), in bytes.
func peakRSS() (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
