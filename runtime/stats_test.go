package runtime

import (
	"encoding/json"
	"testing"
	"time"
)

// Stats keeps each duration once; its JSON gives them in milliseconds
// under the names cli.md documents, and every count beside them.
func TestStatsJSON(t *testing.T) {
	st := Stats{Duration: 1500 * time.Microsecond, FuelUsed: 7, MemoryBytes: 65536, BytesWritten: 3,
		HTTPRequests: 1, HTTPBytesSent: 2, HTTPBytesReceived: 4, ExitWait: 250 * time.Microsecond,
		QueueWait: 2 * time.Second, Queued: 2}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]float64
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"durationMs": 1.5, "fuelUsed": 7, "memoryBytes": 65536, "bytesWritten": 3,
		"httpRequests": 1, "httpBytesSent": 2, "httpBytesReceived": 4, "exitWaitMs": 0.25, "queueWaitMs": 2000, "queued": 2}
	if len(got) != len(want) {
		t.Errorf("JSON %s has %d fields, want %d", b, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (JSON %s)", k, got[k], v, b)
		}
	}
	// A pointer marshals the same (the CLI's report holds *Stats).
	if p, _ := json.Marshal(&st); string(p) != string(b) {
		t.Errorf("*Stats marshals as %s, Stats as %s", p, b)
	}
}
