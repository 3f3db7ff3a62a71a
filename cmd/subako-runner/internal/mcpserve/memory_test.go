package mcpserve

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// heapMB is the heap in use after a collection, in MB.
func heapMB() float64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return float64(m.HeapInuse) / 1e6
}

// peakHeap samples the heap in use every 10 ms until stop is called, and
// returns the largest sample in MB.
func peakHeap() (stop func() float64) {
	done := make(chan struct{})
	peak := make(chan float64)
	go func() {
		var max float64
		var m goruntime.MemStats
		for {
			goruntime.ReadMemStats(&m)
			max = float64(max64(uint64(max*1e6), m.HeapInuse)) / 1e6
			select {
			case <-done:
				peak <- max
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() float64 { close(done); return <-peak }
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// BenchmarkCancelFloodMemory measures the heap held by one HTTP session
// after 400 notifications/cancelled with 1 MiB ids of requests never sent
// (the repro: 51 MB → 2.65 GB, held until the session ended).
// Run with -benchtime 1x; the metric is heap-MB after the flood.
func BenchmarkCancelFloodMemory(b *testing.B) {
	f := newFixture(b)
	srv := New(f.load(b, testdata+"packages/cgreet"), Options{Logger: f.log})
	b.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	for b.Loop() {
		session := initialized(b, ts.URL)
		before := heapMB()
		for i := range 400 {
			id := fmt.Sprintf(`"%s%04d"`, strings.Repeat("x", 1<<20-6), i) // 400 distinct ids of 1 MiB
			rawPost(b, ts.URL, session, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`)
		}
		after := heapMB()
		b.ReportMetric(before, "heap-MB-before")
		b.ReportMetric(after, "heap-MB-after")
	}
}

// BenchmarkMadeUpSessionBodies measures the peak heap while 250 clients
// at once POST 4 MiB bodies under made-up session ids (the repro:
// 2.45 GB held). Run with -benchtime 1x; the metric is the peak heap-MB.
func BenchmarkMadeUpSessionBodies(b *testing.B) {
	f := newFixture(b)
	srv := New(f.load(b, testdata+"packages/cgreet"), Options{Logger: f.log})
	b.Cleanup(func() { srv.Close(context.Background()) })
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 4<<20-100) + `"}}`
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 300}}
	for b.Loop() {
		before := heapMB()
		stop := peakHeap()
		var wg sync.WaitGroup
		for i := range 250 {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Session-Id", "made-up-"+string(rune('a'+i%26)))
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		b.ReportMetric(before, "heap-MB-before")
		b.ReportMetric(stop(), "heap-MB-peak")
	}
}
