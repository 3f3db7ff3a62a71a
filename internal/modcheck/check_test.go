package modcheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/limits"
)

const checksDir = "../../testdata/checks"

// defaultOpts are the §9 defaults: 256 MiB of memory, and the default
// structural bounds.
var defaultOpts = Options{MaxMemoryBytes: 256 << 20, Structure: limits.DefaultStructure()}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(checksDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// want is one expected problem: its code and fragments its message must
// contain (the offending import, export, section or instruction).
type want struct {
	code  string
	names []string
}

func TestCheckReportsEachCodeForItsFixture(t *testing.T) {
	tests := []struct {
		fixture string
		want    []want
	}{
		{"not_wasm.txt", []want{{CodeNotWasm, []string{"magic bytes"}}}},
		{"empty.wasm", []want{{CodeNotWasm, []string{"empty"}}}},
		{"truncated_header.wasm", []want{{CodeNotWasm, []string{"8-byte WebAssembly header"}}}},
		{"component.wasm", []want{{CodeComponent, []string{"WebAssembly component", "core module (WASI preview 1 command)"}}}},
		{"invalid_truncated.wasm", []want{{CodeInvalidModule, []string{"byte offset 0x8", "type section"}}}},
		{"invalid_bad_leb.wasm", []want{{CodeInvalidModule, []string{"byte offset 0xb", "function type index", "integer too large"}}}},
		{"invalid_opcode.wasm", []want{{CodeInvalidModule, []string{"function 0", "byte offset 0x31", "unknown opcode 0x27"}}}},
		{"threads_shared.wasm", []want{{CodeThreads, []string{"memory 0 is shared"}}}},
		{"threads_atomic.wasm", []want{{CodeThreads, []string{"function 0 (bump)", "`i32.atomic.rmw.add`"}}}},
		{"threads_c.wasm", []want{
			{CodeThreads, []string{"memory 0 is shared"}},
			{CodeThreads, []string{"function 1", "`i32.atomic.rmw.cmpxchg`", "5 atomic instructions in 2 functions", "`memory.atomic.wait32`"}},
		}},
		{"exceptions_legacy.wasm", []want{
			{CodeExceptions, []string{"tag section", "1 exception tag"}},
			{CodeExceptions, []string{`function 1 (export "_start")`, "exception-handling instruction `try` (legacy exceptions)", "`throw`", "`catch`"}},
		}},
		{"exceptions_try_table.wasm", []want{{CodeExceptions, []string{`function 0 (export "_start")`, "`try_table`"}}}},
		{"missing_start.wasm", []want{{CodeMissingStart, []string{"no function named _start"}}}},
		{"bad_start_signature.wasm", []want{{CodeBadStartSignature, []string{"_start has type (i32) -> i32", "() -> ()"}}}},
		{"reactor_c.wasm", []want{
			{CodeReactor, []string{"exports _initialize", "reactor"}},
			{CodeMissingStart, []string{"_start"}},
		}},
		{"missing_memory.wasm", []want{{CodeMissingMemory, []string{`as "memory"`, `exported as "mem"`}}}},
		{"unknown_import.wasm", []want{
			{CodeUnknownImport, []string{`import "env"."foo"`, "only wasi_snapshot_preview1 and subako_http"}},
			{CodeUnknownImport, []string{`import "wasi_unstable"."fd_write"`, "before preview 1"}},
			{CodeUnknownImport, []string{`import "wasi_snapshot_preview1"."sock_open"`, `no function named "sock_open"`}},
		}},
		{"import_signature.wasm", []want{
			{CodeImportSignature, []string{`import "subako_http"."request" has type (i32) -> i32`, "(i32, i32) -> i32"}},
			{CodeImportSignature, []string{`"clock_time_get" has type (i32, i32, i32) -> i32`, "(i32, i64, i32) -> i32"}},
		}},
		{"non_function_import.wasm", []want{
			{CodeNonFunctionImport, []string{`import "env"."memory" is a memory`}},
			{CodeUnknownImport, []string{`import "env"."memory"`, "only wasi_snapshot_preview1 and subako_http"}},
			{CodeNonFunctionImport, []string{`import "env"."table" is a table`}},
			{CodeUnknownImport, []string{`import "env"."table"`}},
			{CodeNonFunctionImport, []string{`import "env"."g" is a global`}},
			{CodeUnknownImport, []string{`import "env"."g"`}},
		}},
		// clang -pthread's imported shared memory: three problems, each
		// with its own code (issue 11, item 5).
		{"env_shared_memory.wasm", []want{
			{CodeNonFunctionImport, []string{`import "env"."memory" is a memory`}},
			{CodeUnknownImport, []string{`import "env"."memory"`, "only wasi_snapshot_preview1 and subako_http"}},
			{CodeThreads, []string{`imported memory "env"."memory" is shared`}},
			{CodeMissingMemory, []string{`as "memory"`}},
		}},
		{"memory_too_large.wasm", []want{{CodeMemoryTooLarge, []string{"memory 0", "4097 pages", "256 MiB"}}}},
		{"several.wasm", []want{
			{CodeUnknownImport, []string{`import "env"."log"`}},
			{CodeReactor, []string{"_initialize"}},
			{CodeMissingStart, []string{"_start"}},
			{CodeMissingMemory, []string{`"memory"`}},
			{CodeThreads, []string{`function 1 (export "_initialize")`, "`i32.atomic.load`"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			got := Check(fixture(t, tt.fixture), defaultOpts)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), list(got))
			}
			for i, w := range tt.want {
				if got[i].Code != w.code {
					t.Errorf("problem %d: code %s, want %s (%s)", i, got[i].Code, w.code, got[i].Message)
				}
				for _, n := range w.names {
					if !strings.Contains(got[i].Message, n) {
						t.Errorf("problem %d: message %q does not name %q", i, got[i].Message, n)
					}
				}
			}
		})
	}
}

func list(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

func TestCheckPassesValidModulesFromRealToolchains(t *testing.T) {
	modules := map[string][]byte{
		"valid_c.wasm (clang + wasi-libc)":         fixture(t, "valid_c.wasm"),
		"valid_min.wasm (duplicate imports, http)": fixture(t, "valid_min.wasm"),
	}
	goPath := testguest.Go(t, filepath.Join(checksDir, "go", "hello"))
	b, err := os.ReadFile(goPath)
	if err != nil {
		t.Fatal(err)
	}
	modules["go/hello (GOOS=wasip1)"] = b
	for name, b := range modules {
		t.Run(name, func(t *testing.T) {
			if got := Check(b, defaultOpts); len(got) != 0 {
				t.Fatalf("valid module rejected:\n%s", list(got))
			}
		})
	}
}

func TestCheckMemoryLimit(t *testing.T) {
	b := fixture(t, "memory_too_large.wasm")
	tests := []struct {
		limit int64
		want  bool
	}{
		{0, false},                   // disabled
		{4097 * 64 << 10, false},     // exactly at the limit
		{4097*64<<10 - 1, true},      // one byte under
		{1 << 40, false},             // far above
		{64 << 10, true},             // one page
		{-1, false},                  // disabled
		{256<<20 + 64<<10, false},    // 256 MiB + one page
		{256<<20 + 64<<10 - 1, true}, // just under
	}
	for _, tt := range tests {
		got := Check(b, Options{MaxMemoryBytes: tt.limit})
		if has := slices.ContainsFunc(got, func(p Problem) bool { return p.Code == CodeMemoryTooLarge }); has != tt.want {
			t.Errorf("limit %d: memory_too_large %v, want %v", tt.limit, has, tt.want)
		}
	}
}

func TestModuleTooLargeNamesSizes(t *testing.T) {
	p := ModuleTooLarge(64<<20+1, 64<<20)
	if p.Code != CodeModuleTooLarge || !strings.Contains(p.Message, "64 MiB") || !strings.Contains(p.Message, "64.00 MiB") {
		t.Fatalf("%v", p)
	}
}

// Hand-built modules for cases no toolchain emits.
func TestCheckEdgeCases(t *testing.T) {
	mod := func(sections ...string) []byte {
		return []byte("\x00asm\x01\x00\x00\x00" + strings.Join(sections, ""))
	}
	const (
		typeVoid   = "\x01\x04\x01\x60\x00\x00"
		funcOne    = "\x03\x02\x01\x00"
		memOne     = "\x05\x03\x01\x00\x01"
		codeEmpty  = "\x0a\x04\x01\x02\x00\x0b"
		exportBoth = "\x07\x13\x02\x06memory\x02\x00\x06_start\x00\x00"
	)
	tests := []struct {
		name  string
		in    []byte
		codes []string
		names []string
	}{
		{"minimal valid", mod(typeVoid, funcOne, memOne, exportBoth, codeEmpty), nil, nil},
		{"start is a memory", mod(typeVoid, funcOne, memOne, "\x07\x13\x02\x06memory\x02\x00\x06_start\x02\x00", codeEmpty),
			[]string{CodeMissingStart}, []string{`export "_start" is a memory`}},
		{"memory is a function", mod(typeVoid, funcOne, memOne, "\x07\x13\x02\x06memory\x00\x00\x06_start\x00\x00", codeEmpty),
			[]string{CodeMissingMemory}, []string{`export "memory" is a function`}},
		{"no memory at all", mod(typeVoid, funcOne, "\x07\x0a\x01\x06_start\x00\x00", codeEmpty),
			[]string{CodeMissingMemory}, []string{"has no memory"}},
		{"start index out of range", mod(typeVoid, funcOne, memOne, "\x07\x13\x02\x06memory\x02\x00\x06_start\x00\x07", codeEmpty),
			[]string{CodeInvalidModule}, []string{"function 7, which does not exist"}},
		{"import type out of range", mod(typeVoid, "\x02\x11\x01\x0bsubako_http\x01x\x00\x05", funcOne, memOne, exportBoth, codeEmpty),
			[]string{CodeInvalidModule, CodeUnknownImport}, []string{"refers to type 5", `"subako_http"."x"`}},
		{"core version 2", []byte("\x00asm\x02\x00\x00\x00"), []string{CodeInvalidModule}, []string{"version 2"}},
		{"shared imported memory", mod("\x02\x09\x01\x01m\x01n\x02\x03\x01\x01", typeVoid[:0]),
			[]string{CodeNonFunctionImport, CodeUnknownImport, CodeThreads, CodeMissingStart, CodeMissingMemory}, []string{`"m"."n" is a memory`, `"m"."n": subako provides only`, `"m"."n" is shared`}},
		{"memory imported from wasi", mod("\x02\x22\x01\x16wasi_snapshot_preview1\x06memory\x02\x00\x01", typeVoid[:0]),
			[]string{CodeNonFunctionImport, CodeUnknownImport, CodeMissingStart, CodeMissingMemory}, []string{`is a memory`, `wasi_snapshot_preview1 provides only functions, no memory named "memory"`}},
		{"five malformed bodies", mod(typeVoid, "\x03\x06\x05\x00\x00\x00\x00\x00", memOne, exportBoth,
			"\x0a\x10\x05"+strings.Repeat("\x02\x00\x27", 5)),
			[]string{CodeInvalidModule, CodeInvalidModule, CodeInvalidModule, CodeInvalidModule},
			[]string{"function 0", "function 1", "function 2", "2 more functions are malformed"}},
		{"tag import", mod(typeVoid, "\x02\x08\x01\x01m\x01t\x04\x00\x00", funcOne, memOne, exportBoth, codeEmpty),
			[]string{CodeExceptions}, []string{`"m"."t" is an exception tag`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.in, defaultOpts)
			var codes []string
			for _, p := range got {
				codes = append(codes, p.Code)
			}
			if !slices.Equal(codes, tt.codes) {
				t.Fatalf("codes %v, want %v:\n%s", codes, tt.codes, list(got))
			}
			for i, n := range tt.names {
				if !strings.Contains(got[i].Message, n) {
					t.Errorf("problem %d %q does not name %q", i, got[i].Message, n)
				}
			}
		})
	}
}
