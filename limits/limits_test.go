package limits

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDefaultMatchesHostContract(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	checks := []struct {
		name      string
		got, want int64
	}{
		{"module size", d.ModuleSize, 64 << 20},
		{"memory", d.Memory, 256 << 20},
		{"discovery timeout", int64(d.DiscoveryTimeout), int64(10 * time.Second)},
		{"call timeout", int64(d.CallTimeout), int64(60 * time.Second)},
		{"exit timeout", int64(d.ExitTimeout), int64(time.Second)},
		{"write budget", d.WriteBudget, 1 << 30},
		{"entries per call", int64(d.MaxEntries), 10_000},
		{"stdout line", d.StdoutLine, 16 << 20},
		{"stdout total", d.StdoutTotal, 64 << 20},
		{"stderr tail", int64(d.StderrTail), 4096},
		{"http request", d.HTTPRequest, 8 << 20},
		{"http inline", d.HTTPInline, 256 << 10},
		{"redirects", int64(d.HTTPRedirects), 10},
		{"pages", int64(d.MaxPages), 16},
		{"tools", int64(d.MaxTools), 1024},
		{"compile timeout", int64(d.CompileTimeout), int64(5 * time.Minute)},
		{"functions", int64(d.Structure.Functions), 100_000},
		{"function size", d.Structure.FunctionSize, 2 << 20},
		{"code size", d.Structure.CodeSize, 32 << 20},
		{"nesting", int64(d.Structure.Nesting), 10_000},
		{"blocks per function", int64(d.Structure.FunctionBlocks), 20_000},
		{"loop nesting", int64(d.Structure.LoopNesting), 1_000},
		{"control cost", d.Structure.ControlCost, 250_000_000},
		{"br_table labels", int64(d.Structure.BrTableTargets), 65_536},
		{"element entries", int64(d.Structure.ElementEntries), 1_000_000},
		{"data segments", int64(d.Structure.DataSegments), 100_000},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if d.MemoryPages() != 4096 {
		t.Errorf("MemoryPages = %d, want 4096", d.MemoryPages())
	}
}

func TestValidateRefusesUnworkableLimits(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Limits)
		want   string
	}{
		{"zero memory", func(l *Limits) { l.Memory = 0 }, "memory"},
		{"memory below a page", func(l *Limits) { l.Memory = 1000 }, "page"},
		{"memory above 4GiB", func(l *Limits) { l.Memory = 5 * GiB }, "4 GiB"},
		{"negative timeout", func(l *Limits) { l.CallTimeout = -time.Second }, "call timeout"},
		{"zero write budget", func(l *Limits) { l.WriteBudget = 0 }, "write budget"},
		{"zero entries", func(l *Limits) { l.MaxEntries = 0 }, "entries"},
		{"negative redirects", func(l *Limits) { l.HTTPRedirects = -1 }, "redirects"},
		{"zero pages", func(l *Limits) { l.MaxPages = 0 }, "pages"},
		{"zero compile timeout", func(l *Limits) { l.CompileTimeout = 0 }, "compile timeout"},
		{"zero nesting", func(l *Limits) { l.Structure.Nesting = 0 }, "nesting"},
		{"zero data segments", func(l *Limits) { l.Structure.DataSegments = 0 }, "data segments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Default()
			tt.mutate(&l)
			err := l.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	l := Default()
	l.Fuel = 0
	if err := l.Validate(); err != nil {
		t.Errorf("fuel 0 (unlimited) must validate: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"256MiB", 256 << 20, false},
		{"256 MiB", 256 << 20, false},
		{"64kib", 64 << 10, false},
		{"1g", 1 << 30, false},
		{"1GB", 1e9, false},
		{"4096", 4096, false},
		{"10B", 10, false},
		{"1.5GiB", 3 << 29, false},
		{"0", 0, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"12 parsecs", 0, true},
		{"-1MiB", 0, true},
		{"1..5MiB", 0, true},
		{"99999999999999999999", 0, true},
		{"9000000000TiB", 0, true},
		{"1e3", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, n := range []int64{0, 1, 1000, KiB, 256 * MiB, GiB, 3 * GiB, 1536 * KiB, 5 * 1024 * GiB} {
		s := FormatSize(n)
		back, err := ParseSize(s)
		if err != nil || back != n {
			t.Errorf("FormatSize(%d) = %q, which parses back to %d, %v", n, s, back, err)
		}
	}
	if got := FormatSize(256 * MiB); got != "256MiB" {
		t.Errorf("FormatSize(256MiB) = %q", got)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"30s", 30 * time.Second, false},
		{"1m30s", 90 * time.Second, false},
		{"250ms", 250 * time.Millisecond, false},
		{"30", 30 * time.Second, false},
		{"0.5", 500 * time.Millisecond, false},
		{"0", 0, false},
		{"-1s", 0, true},
		{"-3", 0, true},
		{"", 0, true},
		{"soon", 0, true},
		{"NaN", 0, true},
		{"1e300", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestWriteBudgetIsAllOrNothing(t *testing.T) {
	b := NewCallBudget(Limits{WriteBudget: 100})
	if !b.Reserve(60) {
		t.Fatal("60 of 100 refused")
	}
	if b.Reserve(41) {
		t.Fatal("41 more accepted past the limit")
	}
	if b.Used() != 60 {
		t.Fatalf("a refused reservation was charged: used %d", b.Used())
	}
	if !b.Reserve(40) || b.Remaining() != 0 {
		t.Fatalf("exact fill refused or miscounted: remaining %d", b.Remaining())
	}
	if !b.Reserve(0) || !b.Reserve(-5) {
		t.Fatal("empty reservations must always succeed")
	}
	b.Refund(30)
	if b.Used() != 70 || b.Limit() != 100 {
		t.Fatalf("after refund used=%d limit=%d", b.Used(), b.Limit())
	}
}

func TestWriteBudgetConcurrentReservationsNeverOvershoot(t *testing.T) {
	b := NewCallBudget(Limits{WriteBudget: 1000})
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				if b.Reserve(3) {
					mu.Lock()
					granted += 3
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if granted != int(b.Used()) || granted > 1000 || granted < 997 {
		t.Fatalf("granted %d, used %d: the account overshot or lost reservations", granted, b.Used())
	}
}

// TestEntriesAreCappedAndCostNoBytes: entries count against their own cap
// and a link's target against MaxLinkTarget, never against the bytes of
// file data (a new file's entry once cost 4 KiB of them, and 1 GiB written
// to a new file got EDQUOT 4 KiB early).
func TestEntriesAreCappedAndCostNoBytes(t *testing.T) {
	l := Default()
	l.WriteBudget, l.MaxEntries = 10, 3
	b := NewCallBudget(l)
	tests := []struct {
		name      string
		extra     int64
		ok        bool
		entries   int64
		linkBytes int64
	}{
		{"a directory", 0, true, 1, 0},
		{"a target one past MaxLinkTarget", MaxLinkTarget + 1, false, 1, 0},
		{"a target of MaxLinkTarget", MaxLinkTarget, true, 2, MaxLinkTarget},
		{"the last entry", 0, true, 3, MaxLinkTarget},
		{"past the cap", 0, false, 3, MaxLinkTarget},
	}
	for _, tt := range tests {
		if got := b.ReserveEntry(tt.extra); got != tt.ok || b.Entries() != tt.entries || b.LinkBytes() != tt.linkBytes || b.Used() != 0 {
			t.Fatalf("%s: ReserveEntry = %v, entries %d, link bytes %d, used %d; want %v, %d, %d, 0", tt.name, got, b.Entries(), b.LinkBytes(), b.Used(), tt.ok, tt.entries, tt.linkBytes)
		}
	}
	b.RefundEntry(MaxLinkTarget)
	if b.Entries() != 2 || b.LinkBytes() != 0 || b.Used() != 0 {
		t.Fatalf("after a refund: entries %d, link bytes %d, used %d", b.Entries(), b.LinkBytes(), b.Used())
	}
	if b.MaxEntries() != 3 || b.Remaining() != 10 {
		t.Fatalf("MaxEntries = %d, Remaining = %d", b.MaxEntries(), b.Remaining())
	}
	// An account made without a cap gets the default one: entries are
	// never unbounded.
	for _, n := range []int{0, -1} {
		if u := NewCallBudget(Limits{WriteBudget: 1, MaxEntries: n}); u.MaxEntries() != DefaultMaxEntries {
			t.Fatalf("MaxEntries %d: the cap is %d, want %d", n, u.MaxEntries(), DefaultMaxEntries)
		}
	}
}

func TestConcurrentEntriesNeverPassTheCap(t *testing.T) {
	l := Default()
	l.MaxEntries = 500
	b := NewCallBudget(l)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := int64(0)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if b.ReserveEntry(1) {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if granted != 500 || b.Entries() != 500 || b.LinkBytes() != 500 || b.Used() != 0 {
		t.Fatalf("granted %d, entries %d, link bytes %d, used %d", granted, b.Entries(), b.LinkBytes(), b.Used())
	}
}

func TestHumanSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"}, {1000, "1000 bytes"}, {64 * KiB, "64 KiB"}, {1536, "1536 bytes"},
		{16 * MiB, "16 MiB"}, {3 * MiB / 2, "1.50 MiB"}, {4 * GiB, "4 GiB"}, {GiB + 1, "1024.00 MiB"},
	} {
		if got := HumanSize(tt.n); got != tt.want {
			t.Errorf("HumanSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
