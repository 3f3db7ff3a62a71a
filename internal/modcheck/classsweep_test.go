package modcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/subako/subako-runner/internal/fuel"
	"github.com/subako/subako-runner/internal/wasmbin"
	"github.com/subako/subako-runner/internal/wasmvalid"
	"github.com/subako/subako-runner/limits"
)

// The opcode-class sweep: for each class of instruction, a function whose
// body is a live chain of one instruction of the class (each takes the
// previous one's result, and the last is stored to memory, so the compiler
// can remove none of them), compiled in a child process as the upload
// compiles it. It is what calibrated the weights of the compile cost model
// (cost.go), and, at the largest size the bounds accept, its acceptance.
//
// SUBAKO_SWEEP=classes runs every chain at SUBAKO_SWEEP_N instructions
// (default 32,768) in one function and reports, per instruction, the
// compile time, the peak RSS above the child's baseline and the bytes the
// compiled module keeps resident; SUBAKO_SWEEP=classes-limits builds, for
// each chain, the largest module the default bounds accept and reports its
// whole upload (docs/security.md has both tables).

// Locals of a chain function: 0 i32, 1 i64, 2 f32, 3 f64, 4 v128, each
// loaded from memory first (so nothing is a constant to fold).
const (
	chainI32 = iota
	chainI64
	chainF32
	chainF64
	chainV128
)

// chainOp is one instruction chain: piece is repeated, taking and leaving
// one value of type typ on the stack.
type chainOp struct {
	name  string
	typ   int
	piece []byte
}

func simd(sub uint32, extra ...byte) []byte {
	return append(wasmbin.AppendU32([]byte{0xfd}, sub), extra...)
}

func misc(sub uint32, extra ...byte) []byte {
	return append(wasmbin.AppendU32([]byte{0xfc}, sub), extra...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// The functions of a chain module: 0 is fd_write (imported), 1 _start,
// 2 an i32 -> i32 identity, also in table 0 at 0.
const (
	chainImport   = 0
	chainIdentity = 2
	chainTypeI2I  = 1 // type index of i32 -> i32
)

// chainOps are the chains, by class (the class is the name's prefix).
func chainOps() []chainOp {
	l := func(i byte) []byte { return []byte{0x20, i} } // local.get
	return []chainOp{
		// plain integer ALU
		{"alu i32.clz", chainI32, []byte{0x67}},
		{"alu i32.popcnt", chainI32, []byte{0x69}},
		{"alu i32.eqz", chainI32, []byte{0x45}},
		{"alu i32.add local", chainI32, cat(l(0), []byte{0x6a})},
		{"alu i32.mul local", chainI32, cat(l(0), []byte{0x6c})},
		{"alu i32.rotl local", chainI32, cat(l(0), []byte{0x77})},
		{"alu i64.popcnt", chainI64, []byte{0x7b}},
		{"alu i64.shr_s local", chainI64, cat(l(1), []byte{0x87})},
		{"alu i32.wrap/i64.extend", chainI32, []byte{0xad, 0xa7}},
		{"alu i32.extend8_s", chainI32, []byte{0xc0}},
		{"alu select", chainI32, cat(l(0), l(0), []byte{0x1b})},
		{"alu i32.lt_u local", chainI32, cat(l(0), []byte{0x49})},
		// division and remainder: traps on zero and overflow
		{"div i32.div_s", chainI32, cat(l(0), []byte{0x6d})},
		{"div i32.rem_u", chainI32, cat(l(0), []byte{0x70})},
		{"div i64.div_s", chainI64, cat(l(1), []byte{0x7f})},
		{"div i64.rem_s", chainI64, cat(l(1), []byte{0x81})},
		// floating point
		{"float f64.sqrt", chainF64, []byte{0x9f}},
		{"float f64.nearest", chainF64, []byte{0x9e}},
		{"float f64.neg", chainF64, []byte{0x9a}},
		{"float f64.min local", chainF64, cat(l(3), []byte{0xa4})},
		{"float f32.max local", chainF32, cat(l(2), []byte{0x97})},
		{"float f64.copysign local", chainF64, cat(l(3), []byte{0xa6})},
		{"float f64.add local", chainF64, cat(l(3), []byte{0xa0})},
		{"float f32.demote/f64.promote", chainF64, []byte{0xb6, 0xbb}},
		// conversions between integers and floats
		{"convert i32.trunc_f64_s/f64.convert_i32_s", chainF64, []byte{0xaa, 0xb7}},
		{"convert i64.trunc_f64_u/f64.convert_i64_u", chainF64, []byte{0xb1, 0xba}},
		{"convert i32.trunc_f32_u/f32.convert_i32_u", chainF32, []byte{0xa9, 0xb3}},
		{"convert i64.trunc_sat_f64_u/f64.convert_i64_u", chainF64, cat(misc(7), []byte{0xba})},
		{"convert i32.trunc_sat_f32_s/f32.convert_i32_s", chainF32, cat(misc(0), []byte{0xb2})},
		{"convert i64.trunc_sat_f32_u/f32.convert_i64_u", chainF32, cat(misc(5), []byte{0xb5})},
		{"convert f64.reinterpret/i64.reinterpret", chainF64, []byte{0xbd, 0xbf}},
		// memory access
		{"load i32.load", chainI32, []byte{0x28, 0x02, 0x00}},
		{"load i32.load from a local", chainI32, cat(l(0), []byte{0x28, 0x02, 0x04, 0x6a})},
		{"load i32.load8_s", chainI32, []byte{0x2c, 0x00, 0x00}},
		{"load i64.load32_u/i32.wrap", chainI32, []byte{0x35, 0x02, 0x00, 0xa7}},
		{"load f64.load/i32.trunc_sat", chainI32, cat([]byte{0x2b, 0x03, 0x00}, misc(2))},
		{"store i32.store8", chainI32, cat([]byte{0x22, 0x00}, l(0), []byte{0x3a, 0x00, 0x00}, l(0))},
		{"store i32.store8 fresh address", chainI32, cat([]byte{0x22, 0x00}, l(0), []byte{0x3a, 0x00, 0x00}, l(0), []byte{0x41, 0x01, 0x6a})},
		{"store i64.store", chainI32, cat([]byte{0x22, 0x00}, l(1), []byte{0x37, 0x03, 0x00}, l(0))},
		{"memory memory.grow", chainI32, []byte{0x40, 0x00}},
		{"memory memory.size", chainI32, []byte{0x1a, 0x3f, 0x00}},
		{"memory memory.fill", chainI32, cat([]byte{0x22, 0x00}, l(0), l(0), misc(11, 0x00), l(0))},
		{"memory memory.copy", chainI32, cat([]byte{0x22, 0x00}, l(0), l(0), misc(10, 0x00, 0x00), l(0))},
		// globals, locals, tables
		{"global global.set/get", chainI32, []byte{0x24, 0x00, 0x23, 0x00}},
		{"local local.tee", chainI32, []byte{0x22, 0x00}},
		{"table table.get/ref.is_null", chainI32, []byte{0x25, 0x00, 0xd1}},
		{"table table.size", chainI32, cat([]byte{0x1a}, misc(16, 0x00))},
		// calls
		{"call call", chainI32, wasmbin.AppendU32([]byte{0x10}, chainIdentity)},
		{"call call_indirect", chainI32, []byte{0x41, 0x00, 0x11, chainTypeI2I, 0x00}},
		{"call call import", chainI32, cat(l(0), l(0), l(0), []byte{0x10, chainImport})},
		// control: a branch out of the function's outer block
		{"branch br_if", chainI32, []byte{0x22, 0x00, 0x0d, 0x00, 0x20, 0x00}},
		// SIMD
		{"simd i8x16.popcnt", chainV128, simd(0x62)},
		{"simd i8x16.abs", chainV128, simd(0x60)},
		{"simd i8x16.neg", chainV128, simd(0x61)},
		{"simd v128.not", chainV128, simd(0x4d)},
		{"simd i64x2.abs", chainV128, simd(0xc0)},
		{"simd f32x4.sqrt", chainV128, simd(0xe3)},
		{"simd f32x4.ceil", chainV128, simd(0x67)},
		{"simd f64x2.nearest", chainV128, simd(0x94)},
		{"simd i32x4.trunc_sat_f32x4_u", chainV128, simd(0xf9)},
		{"simd f32x4.convert_i32x4_u", chainV128, simd(0xfb)},
		{"simd i32x4.trunc_sat_f64x2_u_zero", chainV128, simd(0xfd)},
		{"simd f64x2.convert_low_i32x4_u", chainV128, simd(0xff)},
		{"simd i16x8.extadd_pairwise_i8x16_u", chainV128, simd(0x7d)},
		{"simd i32x4.extadd_pairwise_i16x8_u", chainV128, simd(0x7f)},
		{"simd i64x2.mul local", chainV128, cat(l(4), simd(0xd5))},
		{"simd i8x16.swizzle local", chainV128, cat(l(4), simd(0x0e))},
		{"simd i8x16.shl local", chainV128, cat(l(0), simd(0x6b))},
		{"simd i8x16.shr_s local", chainV128, cat(l(0), simd(0x6c))},
		{"simd i64x2.shr_u local", chainV128, cat(l(0), simd(0xcd))},
		{"simd f32x4.min local", chainV128, cat(l(4), simd(0xe8))},
		{"simd f64x2.max local", chainV128, cat(l(4), simd(0xf5))},
		{"simd i16x8.q15mulr_sat_s local", chainV128, cat(l(4), simd(0x82))},
		{"simd i8x16.narrow_i16x8_u local", chainV128, cat(l(4), simd(0x66))},
		{"simd i64x2.extmul_high_i32x4_u local", chainV128, cat(l(4), simd(0xdf))},
		{"simd i8x16.shuffle local", chainV128, cat(l(4), simd(0x0d, 0, 17, 2, 19, 4, 21, 6, 23, 8, 25, 10, 27, 12, 29, 14, 31))},
		{"simd i64x2.gt_s local", chainV128, cat(l(4), simd(0xd9))},
		{"simd i8x16.bitmask/splat", chainV128, cat(simd(0x64), simd(0x0f))},
		{"simd i8x16.all_true/splat", chainV128, cat(simd(0x63), simd(0x0f))},
		{"simd extract_lane_u/replace_lane", chainV128, cat([]byte{0x21, 0x04}, l(4), simd(0x16, 3), []byte{0x21, 0x00}, l(4), l(0), simd(0x17, 5))},
		{"simd v128.bitselect local", chainV128, cat(l(4), l(4), simd(0x52))},
		{"simd v128.load32_zero/i32x4.extract_lane", chainI32, cat(simd(0x5c, 0x02, 0x00), simd(0x1b, 0))},
		{"simd v128.load8_lane", chainV128, cat([]byte{0x21, 0x04}, l(0), l(4), simd(0x54, 0x00, 0x00, 3))},
	}
}

// chainModule is a module whose _start runs n pieces of op in each of
// funcs functions (_start calls the others).
func chainModule(op chainOp, n, funcs int) []byte {
	body := chainBody(op, n)
	m := sweepModule{
		imports: 1,
		types:   []wasmbin.FuncType{{Params: []wasmbin.ValType{wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}},
		funcs:   []uint32{chainTypeI2I},
		globals: mutableGlobals(1),
		tables:  []uint32{1},
		// an active segment: function 2 at 0 of table 0
		elems:  []byte{0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, chainIdentity},
		bodies: []sweepBody{body, {expr: []byte{0x20, 0x00}}},
	}
	for range funcs - 1 {
		m.funcs = append(m.funcs, 0)
		m.bodies = append(m.bodies, body)
	}
	return m.bytes()
}

// chainBody loads the five locals, then runs n pieces of op on the local of
// its type and stores the result at address 0.
func chainBody(op chainOp, n int) sweepBody {
	locals := []byte{5, 1, byte(wasmbin.I32), 1, byte(wasmbin.I64), 1, byte(wasmbin.F32), 1, byte(wasmbin.F64), 1, 0x7b}
	var expr []byte
	loads := [][]byte{{0x28, 0x02, 0x08}, {0x29, 0x03, 0x10}, {0x2a, 0x02, 0x18}, {0x2b, 0x03, 0x20}, simd(0x00, 0x04, 0x30)}
	stores := [][]byte{{0x36, 0x02, 0x00}, {0x37, 0x03, 0x00}, {0x38, 0x02, 0x00}, {0x39, 0x03, 0x00}, simd(0x0b, 0x04, 0x00)}
	for i, ld := range loads {
		expr = append(expr, 0x41, 0x00)
		expr = append(expr, ld...)
		expr = append(expr, 0x21, byte(i))
	}
	expr = append(expr, 0x02, 0x40) // block: br_if's target
	expr = append(expr, 0x41, 0x00, 0x20, byte(op.typ))
	expr = append(expr, bytes.Repeat(op.piece, n)...)
	expr = append(expr, stores[op.typ]...)
	expr = append(expr, 0x0b)
	return sweepBody{locals: locals, expr: expr}
}

// chainChild compiles the chain named in SUBAKO_SWEEP_CHAIN
// ("name|n|funcs") and prints what it cost.
func chainChild(t *testing.T, spec string) {
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[1])
	funcs, _ := strconv.Atoi(parts[2])
	var wasm []byte
	for _, op := range chainOps() {
		if op.name == parts[0] {
			wasm = chainModule(op, n, funcs)
		}
	}
	if path, ok := strings.CutPrefix(parts[0], "file:"); ok {
		var err error
		if wasm, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if wasm == nil {
		t.Fatalf("no chain %q", parts[0])
	}
	runtime.GC()
	debug.FreeOSMemory()
	base := procStatus(t, "VmRSS:")
	ctx := context.Background()
	start := time.Now()
	ps := Check(wasm, defaultOpts)
	checkT := time.Since(start)
	if err := wasmvalid.Validate(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2), wasm); err != nil {
		t.Fatalf("validate: %v", err)
	}
	metered, err := fuel.Instrument(wasm)
	if err != nil {
		t.Fatalf("instrument: %v", err)
	}
	c0 := time.Now()
	cpu0 := cpuTime()
	config := wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2)
	cacheDir := os.Getenv("SUBAKO_SWEEP_CACHE") // to measure the machine code's size
	if cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			t.Fatal(err)
		}
		config = config.WithCompilationCache(cache)
	}
	wz := wazero.NewRuntimeWithConfig(ctx, config)
	compiled, err := wz.CompileModule(ctx, metered)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	compileT := time.Since(c0)
	compileCPU := cpuTime() - cpu0
	total := time.Since(start)
	hwm := procStatus(t, "VmHWM:")
	runtime.GC()
	debug.FreeOSMemory()
	kept := procStatus(t, "VmRSS:") - base - int64(len(metered)) - int64(len(wasm))
	runtime.KeepAlive(compiled)
	problems := ""
	for _, p := range ps {
		problems += p.String() + "; "
	}
	fmt.Printf("CHAIN %d %d %.4f %.4f %.4f %d %d %d %.4f %q\n", len(wasm), len(metered), checkT.Seconds(), compileT.Seconds(), total.Seconds(), hwm-base, kept, base, compileCPU, problems)
}

// cpuTime is the user and system time this process has used.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// procStatus is a field of /proc/self/status in bytes.
func procStatus(t *testing.T, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// chainRun is what a chain child measured.
type chainRun struct {
	wasm, metered         int
	check, compile, total float64
	peak, kept, base      int64
	problems              string
	cpu                   float64 // the child's user and system time compiling
}

func runChainChild(t *testing.T, name string, n, funcs int, timeout time.Duration) (chainRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCompileCostOfClasses$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("SUBAKO_SWEEP_CHAIN=%s|%d|%d", name, n, funcs))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var r chainRun
	if err := cmd.Run(); err != nil {
		return r, fmt.Errorf("%s × %d in %d functions: %v\n%s", name, n, funcs, err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "CHAIN "); ok {
			_, err := fmt.Sscanf(rest, "%d %d %f %f %f %d %d %d %f %q", &r.wasm, &r.metered, &r.check, &r.compile, &r.total, &r.peak, &r.kept, &r.base, &r.cpu, &r.problems)
			return r, err
		}
	}
	return r, fmt.Errorf("%s: no result\n%s", name, out.String())
}

func TestCompileCostOfClasses(t *testing.T) {
	if spec := os.Getenv("SUBAKO_SWEEP_CHAIN"); spec != "" {
		chainChild(t, spec)
		return
	}
	mode := os.Getenv("SUBAKO_SWEEP")
	if mode == "classes-limits" {
		classesAtLimits(t)
		return
	}
	if mode != "classes" {
		t.Skip("SUBAKO_SWEEP=classes measures each instruction class's compile cost; SUBAKO_SWEEP=classes-limits compiles the largest module of each the default bounds accept")
	}
	n := 32_768
	if s := os.Getenv("SUBAKO_SWEEP_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	only := os.Getenv("SUBAKO_SWEEP_ONLY")
	reps := 2
	for _, op := range chainOps() {
		if only != "" && !strings.Contains(op.name, only) {
			continue
		}
		best := chainRun{compile: 1e9}
		for range reps {
			r, err := runChainChild(t, op.name, n, 1, 5*time.Minute)
			if err != nil {
				t.Error(err)
				break
			}
			if r.compile < best.compile {
				best.compile, best.total = r.compile, r.total
			}
			if best.cpu == 0 || r.cpu < best.cpu {
				best.cpu = r.cpu
			}
			best.peak = max(best.peak, r.peak)
			best.kept = max(best.kept, r.kept)
			best.wasm, best.metered, best.problems = r.wasm, r.metered, r.problems
		}
		t.Logf("%-50s %6.0f ns %6.0f ns cpu %7.0f B peak %6.0f B kept %4.1f B wasm  %d metered  %.60s", op.name,
			best.compile*1e9/float64(n), best.cpu*1e9/float64(n), float64(best.peak)/float64(n), float64(best.kept)/float64(n), float64(len(op.piece)), best.metered, best.problems)
	}
}

// limitChains are the chains the limits sweep compiles: the costliest of
// each class per unit of weight.
var limitChains = []string{
	"alu i32.eqz", "alu select", "float f64.neg", "float f64.min local", "div i64.div_s",
	"convert i64.trunc_f64_u/f64.convert_i64_u", "load i32.load", "store i32.store8 fresh address",
	"table table.get/ref.is_null", "global global.set/get", "branch br_if", "call call", "call call_indirect",
	"call call import", "memory memory.grow", "memory memory.fill", "memory memory.copy",
	"simd i8x16.popcnt", "simd i64x2.extmul_high_i32x4_u local", "simd i8x16.all_true/splat",
}

// largestAccepted is the largest n in [1, hi] for which ok holds (ok is
// monotone), or 0.
func largestAccepted(hi int, ok func(int) bool) int {
	lo := 0
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// chainAtLimits is the largest chain module of op the default bounds
// accept: the longest function, then as many of them as fit.
func chainAtLimits(op chainOp) (n, funcs int) {
	st := defaultOpts.Structure
	n = largestAccepted(int(st.FunctionSize)/len(op.piece), func(n int) bool {
		return len(Check(chainModule(op, n, 1), defaultOpts)) == 0
	})
	if n == 0 {
		return 0, 0
	}
	funcs = largestAccepted(int(st.CodeSize)/(n*len(op.piece))+1, func(k int) bool {
		return len(Check(chainModule(op, n, k), defaultOpts)) == 0
	})
	return n, funcs
}

func classesAtLimits(t *testing.T) {
	only := os.Getenv("SUBAKO_SWEEP_ONLY")
	var table strings.Builder
	table.WriteString("| chain (class) | per function | functions | module | compile CPU | upload wall | peak RSS |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, name := range limitChains {
		if only != "" && !strings.Contains(name, only) {
			continue
		}
		var op chainOp
		for _, o := range chainOps() {
			if o.name == name {
				op = o
			}
		}
		n, funcs := chainAtLimits(op)
		if n == 0 {
			t.Errorf("%s: no chain passes Check", name)
			continue
		}
		r, err := runChainChild(t, name, n, funcs, 10*time.Minute)
		if err != nil {
			t.Error(err)
			continue
		}
		if r.problems != "" {
			t.Errorf("%s: %s", name, r.problems)
		}
		peak := r.peak + r.base
		fmt.Fprintf(&table, "| %s | %d | %d | %s | %.2f s | %.2f s | %.0f MB |\n", name, n, funcs, limits.HumanSize(int64(r.wasm)), r.cpu, r.total, float64(peak)/1e6)
		t.Logf("%s: %d × %d: %s, compile %.2f s CPU, %.2f s wall, %.0f MB peak", name, n, funcs, limits.HumanSize(int64(r.wasm)), r.cpu, r.total, float64(peak)/1e6)
	}
	t.Log("\n" + table.String())
}
