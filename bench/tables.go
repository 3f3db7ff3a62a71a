package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/limits"
	"github.com/subako/subako-runner/runtime"
)

// benchTables measures what a table a module declares costs the host: a
// command whose _start returns at once, with one funcref table of n
// elements, run tableRuns times, tableParallel at a time (MaxInstances),
// under a 256 MiB memory limit, in a child process each (-child-tables n)
// so that the peak RSS the kernel reports is that run's alone. wazero
// keeps a table on the Go heap (8 bytes an element), allocated at every
// instantiation and returned only when the garbage collector runs, so the
// RSS grows with n times the instances the collector lets pile up, not
// with n times MaxInstances. The rows are no table, a table at the
// default limits.Structure.TableElements, and the 30M-element table of
// issue 25 (allowed for this row only by raising the limit).
func benchTables(ctx context.Context, o options, t *table) error {
	for _, gogc := range []int{100, 800} {
		if err := benchTablesGC(ctx, o, t, gogc); err != nil {
			return err
		}
	}
	return nil
}

// benchTablesGC is benchTables under one GOGC: the collector lets garbage
// grow to GOGC percent of the live heap, so the tables the instances at a
// time hold are multiplied by 1+GOGC/100 (issue 25's 4.25 GB was 2
// instances of 240 MB at GOGC 800).
func benchTablesGC(ctx context.Context, o options, t *table, gogc int) error {
	capN := int(limits.DefaultStructure().TableElements)
	var base int64
	for _, n := range []int{0, capN, o.tableBomb} {
		if n < 0 {
			continue
		}
		rss, err := runTablesChild(ctx, o, n, gogc, false)
		if err != nil {
			return err
		}
		if n == 0 {
			base = rss
		}
		what := fmt.Sprintf("tables: peak RSS, GOGC %d, %d runs %d at a time, table of %d elements", gogc, tableRuns, tableParallel, n)
		value := fmt.Sprintf("%.0f MB", float64(rss)/1e6)
		switch {
		case n == 0:
			t.add(what, value, "-", 0, "", true)
		case n == capN:
			// The bound: what the instances at a time hold at once,
			// times the collector's headroom, plus some slack.
			limit := base + int64(100+gogc)*int64(tableParallel)*int64(n)*limits.TableElementBytes/100 + 64<<20
			t.add(what, value, fmt.Sprintf("%.0f MB without", float64(base)/1e6), float64(rss)/float64(base),
				fmt.Sprintf("≤ %.0f MB", float64(limit)/1e6), rss <= limit)
		default:
			t.add(what+" (over the limit, raised for this row)", value, fmt.Sprintf("%.0f MB without", float64(base)/1e6), float64(rss)/float64(base), "", true)
		}
	}
	if o.tableBomb > 0 {
		// The same elements grown by table.grow at run time, which the
		// memory limit charges (8 bytes an element) instead.
		rss, err := runTablesChild(ctx, o, o.tableBomb, gogc, true)
		if err != nil {
			return err
		}
		t.add(fmt.Sprintf("tables: peak RSS, GOGC %d, %d runs %d at a time, table grown by %d elements", gogc, tableRuns, tableParallel, o.tableBomb),
			fmt.Sprintf("%.0f MB", float64(rss)/1e6), fmt.Sprintf("%.0f MB without", float64(base)/1e6), float64(rss)/float64(base), "", true)
	}
	return nil
}

// tableRuns and tableParallel are issue 25's reproduction: 60 calls,
// MaxInstances 2.
const (
	tableRuns     = 60
	tableParallel = 2
)

// runTablesChild runs the measure in a child and returns its peak RSS.
func runTablesChild(ctx context.Context, o options, n, gogc int, grow bool) (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, exe, "-child-tables", strconv.Itoa(n), "-child-table-grow="+strconv.FormatBool(grow), "-child-work", o.work)
	cmd.Env = append(os.Environ(), "GOGC="+strconv.Itoa(gogc))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("tables child (%d elements): %v\n%s", n, err, out.String())
	}
	// The child's own VmHWM: the kernel's rusage of a child counts the
	// parent's resident set at the fork.
	var kb int64
	if _, err := fmt.Sscanf(strings.TrimSpace(out.String()), "VmHWM %d", &kb); err != nil {
		return 0, fmt.Errorf("tables child (%d elements): %q: %v", n, out.String(), err)
	}
	logf("   GOGC %d, table of %d elements (grown: %v): peak RSS %.0f MB", gogc, n, grow, float64(kb)/1e3)
	return kb << 10, nil
}

// childTables is the child side: it writes the module and runs it.
func childTables(ctx context.Context, n int, grow bool, work string) error {
	path := filepath.Join(work, fmt.Sprintf("table-%d-%v.wasm", n, grow))
	if err := os.WriteFile(path, tableModule(uint32(n), grow), 0o644); err != nil {
		return err
	}
	lim := limits.Default()
	lim.Structure.TableElements = max(lim.Structure.TableElements, int64(n))
	rt, err := runtime.New(ctx, runtime.Config{Limits: &lim, MaxInstances: tableParallel})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, tableRuns)
	for range tableParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range tableRuns / tableParallel {
				res, err := rt.RunCommand(ctx, path, runtime.Command{})
				if err == nil && (res.Crash != nil || res.ExitCode != 0) {
					err = fmt.Errorf("the table module did not exit 0: %+v", res)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Println("VmHWM", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return nil
		}
	}
	return fmt.Errorf("no VmHWM in /proc/self/status")
}

// tableModule is a WASI command with one funcref table of n elements and
// a _start that returns; with grow, the table starts empty and _start
// grows it by n elements (table.grow, charged to the memory limit).
func tableModule(n uint32, grow bool) []byte {
	declared := n
	if grow {
		declared = 0
	}
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = wasmbin.AppendSection(out, wasmbin.SectionType, wasmbin.AppendFuncType([]byte{1}, wasmbin.FuncType{}))
	out = wasmbin.AppendSection(out, wasmbin.SectionFunction, []byte{1, 0})
	if n > 0 {
		out = wasmbin.AppendSection(out, wasmbin.SectionTable, wasmbin.AppendU32([]byte{1, 0x70, 0x00}, declared))
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionMemory, []byte{1, 0, 1})
	exports := []byte{2}
	exports = wasmbin.AppendExport(exports, wasmbin.Export{Name: "memory", Kind: wasmbin.KindMemory})
	exports = wasmbin.AppendExport(exports, wasmbin.Export{Name: "_start", Kind: wasmbin.KindFunc})
	out = wasmbin.AppendSection(out, wasmbin.SectionExport, exports)
	body := []byte{0}
	if grow && n > 0 {
		body = append(body, 0xd0, 0x70, 0x41) // ref.null func; i32.const n
		body = wasmbin.AppendS64(body, int64(n))
		body = append(body, 0xfc, 0x0f, 0x00, 0x1a) // table.grow 0; drop
	}
	body = append(body, 0x0b)
	code := append(wasmbin.AppendU32([]byte{1}, uint32(len(body))), body...)
	return wasmbin.AppendSection(out, wasmbin.SectionCode, code)
}
