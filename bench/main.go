package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/subako/subako-runner/runtime"
)

// options are the command line: which measures run and how many times.
type options struct {
	only          map[string]bool
	pkgs          map[string]bool
	calls         int
	procCalls     int
	scaleCallers  int
	scaleRound    time.Duration
	scaleRounds   int
	reopenRuns    int
	coldRuns      int
	fuelRuns      int
	downloadBytes int64
	memCalls      int
	memSoak       int
	memConcurrent int
	tableBomb     int
	workerCalls   int
	workerRounds  int
	workerKills   int
	workerRows    map[string]bool
	workerLog     bool
	timeout       time.Duration
	work          string
	many          manyOptions
}

var measures = []string{"latency", "scale", "reopen", "fuel", "memory", "download", "tables", "many", "estimate", "otel", "worker"}

func main() {
	// The worker measure's runtimes re-execute this program as their
	// worker processes: it must become one before anything else.
	runtime.ServeWorker()
	var child childDownload
	flag.StringVar(&child.pkg, "child-download", "", "internal: run the download measure in this process, on the package directory given")
	flag.StringVar(&child.artifact, "child-artifact", "", "internal: the package's stored artifact")
	flag.StringVar(&child.cache, "child-cache", "", "internal: the compilation cache directory")
	flag.StringVar(&child.url, "child-url", "", "internal: the URL to download")
	flag.Int64Var(&child.size, "child-size", 0, "internal: the expected body size")
	var scaleKid childScale
	flag.StringVar(&scaleKid.pkg, "child-scale", "", "internal: run calls/s rounds of the machine control on the package directory given, one for each line of stdin")
	flag.IntVar(&scaleKid.gc, "child-gc", 100, "internal: the scale child's GOGC")
	childTable := flag.Int("child-tables", -1, "internal: run the tables measure in this process, with a table of this many elements")
	childGrow := flag.Bool("child-table-grow", false, "internal: the tables child grows its table with table.grow instead of declaring it")
	childWork := flag.String("child-work", "", "internal: the tables child's work directory")
	childPing := flag.Bool("child-pingpong", false, "internal: echo 64-byte messages on descriptor 3 (the worker measure's round-trip floor)")

	var o options
	only := flag.String("only", strings.Join(measures, ","), "comma-separated measures to run: "+strings.Join(measures, ", "))
	pkgs := flag.String("pkgs", "C,Go", "greet packages for latency and scale: C, Go")
	flag.IntVar(&o.calls, "calls", 200, "in-process calls (and floor runs) per package for latency")
	flag.IntVar(&o.procCalls, "proc-calls", 40, "`wazero run` processes per package for latency")
	flag.IntVar(&o.scaleCallers, "scale-callers", 4, "concurrent callers for calls/s")
	flag.DurationVar(&o.scaleRound, "scale-round", 250*time.Millisecond, "length of one calls/s round")
	flag.IntVar(&o.scaleRounds, "scale-rounds", 24, "calls/s rounds per GOMAXPROCS setting (interleaved)")
	flag.IntVar(&o.reopenRuns, "reopen-runs", 5, "warm reopens of the stored SDK package")
	flag.IntVar(&o.coldRuns, "cold-runs", 2, "cold compiles of the SDK package")
	flag.IntVar(&o.fuelRuns, "fuel-runs", 31, "runs of each CPU-bound guest per mode")
	flag.Int64Var(&o.downloadBytes, "download-bytes", 1<<30, "size of the HTTP download")
	flag.IntVar(&o.memCalls, "mem-calls", 100, "calls of the 64 MiB guest for its exit times (half as many of the 256 MiB one)")
	flag.IntVar(&o.memSoak, "mem-soak", 1000, "calls of the 64 MiB guest between the two RSS readings")
	flag.IntVar(&o.memConcurrent, "mem-concurrent", 200, "calls of the 64 MiB guest, 4 at once, with admission (a fifth as many without)")
	flag.IntVar(&o.tableBomb, "table-bomb", -1, "tables: also run issue 25's table of this many elements (30000000: about 4 GB of RSS before the cap), the limit raised for it; -1 skips it")
	flag.IntVar(&o.workerCalls, "worker-calls", 200, "worker: timed sequential calls per side and package")
	flag.IntVar(&o.workerRounds, "worker-rounds", 12, "worker: calls/s rounds per side (interleaved; -scale-round long)")
	flag.IntVar(&o.workerKills, "worker-kills", 10, "worker: SIGKILLed workers, each timed to the next successful call")
	workerRows := flag.String("worker-rows", "latency,throughput,rss,kill", "worker: which of its rows to run")
	flag.BoolVar(&o.workerLog, "worker-log", false, "worker: the worker runtime's log (and its workers' stderr) on stderr")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "give up on the whole run after this long")
	registerManyFlags(&o.many)
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()

	if scaleKid.pkg != "" {
		scaleKid.cache = child.cache
		if err := scaleKid.run(context.Background(), o, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	if *childPing {
		if err := childPingPong(); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	if *childTable >= 0 {
		if err := childTables(context.Background(), *childTable, *childGrow, *childWork); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	if child.pkg != "" {
		if err := child.run(context.Background(), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}

	o.only = map[string]bool{}
	for _, m := range strings.Split(*only, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !contains(measures, m) {
			fmt.Fprintf(os.Stderr, "bench: unknown measure %q (want %s)\n", m, strings.Join(measures, ", "))
			os.Exit(2)
		}
		o.only[m] = true
	}
	o.workerRows = map[string]bool{}
	for _, r := range strings.Split(*workerRows, ",") {
		o.workerRows[strings.TrimSpace(r)] = true
	}
	o.pkgs = map[string]bool{}
	for _, p := range strings.Split(*pkgs, ",") {
		o.pkgs[strings.TrimSpace(p)] = true
	}
	if _, err := os.Stat(filepath.Join("testdata", "packages", "cgreet", "module.wasm")); err != nil {
		fmt.Fprintln(os.Stderr, "bench: run it from the module root (go run ./bench):", err)
		os.Exit(2)
	}
	work, err := os.MkdirTemp("", "subako-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	o.work = work
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	t := &table{}
	err = run(ctx, o, t)
	cancel()
	os.RemoveAll(work)
	fmt.Println()
	t.print(os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, t *table) error {
	steps := []struct {
		name string
		fn   func(context.Context, options, *table) error
	}{
		{"latency", benchLatency},
		{"scale", benchScale},
		{"reopen", benchReopen},
		{"fuel", benchFuel},
		{"memory", benchMemory},
		{"download", benchDownload},
		{"tables", benchTables},
		{"many", benchMany},
		{"estimate", benchEstimate},
		{"otel", benchOtel},
		{"worker", benchWorker},
	}
	for _, s := range steps {
		if !o.only[s.name] {
			continue
		}
		start := time.Now()
		logf("== %s", s.name)
		if err := s.fn(ctx, o, t); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		logf("   %s took %v", s.name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// logf reports progress on stderr, so stdout holds the table alone.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// row is one line of the table. A ratio of 0 prints as "-"; met is
// "yes", "NO" or "-" (no target).
type row struct {
	measure, value, baseline string
	ratio                    float64
	target, met              string
}

type table struct{ rows []row }

// add appends a row; ok reports whether the target was met, and target ""
// means the row is information only.
func (t *table) add(measure, value, baseline string, ratio float64, target string, ok bool) {
	met := "-"
	if target != "" {
		met = "NO"
		if ok {
			met = "yes"
		}
	}
	t.rows = append(t.rows, row{measure, value, baseline, ratio, target, met})
}

func (t *table) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tvalue\tbaseline\tratio\ttarget\tmet?")
	fmt.Fprintln(tw, "-------\t-----\t--------\t-----\t------\t----")
	for _, r := range t.rows {
		ratio := "-"
		if r.ratio != 0 {
			ratio = fmt.Sprintf("%.3g×", r.ratio)
			if r.ratio >= 100 {
				ratio = fmt.Sprintf("%.0f×", r.ratio)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.measure, r.value, r.baseline, ratio, r.target, r.met)
	}
	tw.Flush()
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// quantile returns the q-quantile (0..1) of ds, nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// dur prints a duration with three significant digits.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	}
}

// mib prints bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
