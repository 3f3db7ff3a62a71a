package conformance

import (
	"testing"
	"time"

	"github.com/subako/subako-runner/limits"
	srt "github.com/subako/subako-runner/runtime"
)

// The time checks are judged from the measured duration and the limit
// alone: given durations (no module, no clock), each side of the warning
// threshold gets its status, and a test-moved threshold is honoured.
func TestTimeChecksJudgeTheDurationAgainstTheLimit(t *testing.T) {
	lim := limits.Default()
	lim.ExitTimeout = time.Second
	lim.DiscoveryTimeout = 10 * time.Second
	lim.CallTimeout = 10 * time.Second
	tests := []struct {
		name   string
		check  string
		took   time.Duration
		near   map[string]float64
		status Status
	}{
		{"exit well inside", "protocol.eof_exit", 5 * time.Millisecond, nil, Pass},
		{"exit at 80%", "protocol.eof_exit", 800 * time.Millisecond, nil, Pass},
		{"exit over 80%", "protocol.eof_exit", 839 * time.Millisecond, nil, Warn},
		{"exit, threshold moved up", "protocol.eof_exit", 839 * time.Millisecond, map[string]float64{"protocol.eof_exit": 0.9}, Pass},
		{"exit after answer over", "protocol.exit_after_answer", 900 * time.Millisecond, nil, Warn},
		{"discovery inside", "discovery.time", 2 * time.Second, nil, Pass},
		{"discovery over 80%", "discovery.time", 9 * time.Second, nil, Warn},
		{"discovery, threshold moved down", "discovery.time", time.Second, map[string]float64{"discovery.time": 0.01}, Warn},
		{"call time inside", "resources.time", time.Second, nil, Pass},
		{"call time over 80%", "resources.time", 8500 * time.Millisecond, nil, Warn},
		{"call time, another check's threshold moved", "resources.time", time.Second, map[string]float64{"discovery.time": 0.01}, Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &run{lim: lim, opts: WithNearLimits(Options{}, tt.near)}
			r.addAll(discoveryChecks)
			r.addAll(protocolChecks)
			r.addAll(lateChecks)
			var c *Check
			for _, x := range r.order {
				if x.ID == tt.check {
					c = x
				}
			}
			switch tt.check {
			case "protocol.eof_exit", "protocol.exit_after_answer":
				r.judgeExitTime(c, &srt.ProbeResult{ExitAfterClose: tt.took}, "the module exited")
			case "discovery.time":
				r.checkDiscoveryTime(tt.took)
			case "resources.time":
				r.evidence = []evidence{{probe: "a call", call: true, profile: &Profile{DurationMs: float64(tt.took) / 1e6}}}
				r.judgeResources()
			}
			if c.Status != tt.status {
				t.Fatalf("%s after %v of its limit: %s, want %s (%s)", tt.check, tt.took, c.Status, tt.status, c.Detail)
			}
		})
	}
}

// A refused upload's detail names the stage of each rejection, from the
// runtime's table; a code the table does not know is shown bare.
func TestRejectionsNameTheirStage(t *testing.T) {
	got := rejections([]srt.Rejection{{Code: srt.CodeUnknownImport, Message: "m1"}, {Code: srt.CodeNoTools, Message: "m2"}, {Code: "newer", Message: "m3"}})
	want := "module checks, unknown_import: m1\ntool list, no_tools: m2\nnewer: m3"
	if got != want {
		t.Errorf("rejections:\n%s\nwant\n%s", got, want)
	}
}
