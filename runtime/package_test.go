package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring of the bad_manifest message; "" = valid
		unknown []string
	}{
		{"minimal", `{"abi":1}`, "", nil},
		{"full", `{"abi":1,"name":"greet","version":"0.1.0","description":"hi"}`, "", nil},
		{"unknown fields tolerated", `{"abi":1,"zeta":true,"alpha":2}`, "", []string{"alpha", "zeta"}},
		{"abi 1.0 is the number 1", `{"abi":1.0}`, "", nil},
		{"abi 2", `{"abi":2}`, "ABI 1", nil},
		{"abi string", `{"abi":"1"}`, "ABI 1", nil},
		{"abi missing", `{"name":"x"}`, `no "abi"`, nil},
		{"not json", `abi: 1`, "not valid JSON", nil},
		{"array", `[1]`, "not valid JSON", nil},
		{"null", `null`, "not a JSON object", nil},
		{"trailing data", `{"abi":1} {}`, "after the JSON object", nil},
		{"name not string", `{"abi":1,"name":7}`, `"name" must be a string`, nil},
		{"version null", `{"abi":1,"version":null}`, `"version" must be a string`, nil},
		{"empty", ``, "not valid JSON", nil},
		// A duplicate name: readers differ on which counts (this one took
		// the last, so {"abi":2,"abi":1} passed).
		{"duplicate abi", `{"abi":2,"abi":1}`, `the key "abi" appears twice`, nil},
		{"duplicate name", `{"abi":1,"name":"a","name":"b"}`, `the key "name" appears twice`, nil},
		{"duplicate escaped", `{"abi":1,"\u0061bi":1}`, `the key "abi" appears twice`, nil},
		{"duplicate nested", `{"abi":1,"x":{"y":1,"z":[{"y":1,"y":2}]}}`, `the key "x"."z"."y" appears twice`, nil},
		{"same name in sibling objects", `{"abi":1,"x":{"y":1},"w":{"y":1,"x":[{"y":1},{"y":2}]}}`, "", []string{"w", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, rej := ParseManifest([]byte(tt.in))
			if tt.wantErr == "" {
				if len(rej) > 0 || m == nil {
					t.Fatalf("want valid, got %v", rej)
				}
				if strings.Join(m.Unknown, ",") != strings.Join(tt.unknown, ",") {
					t.Errorf("Unknown = %v, want %v", m.Unknown, tt.unknown)
				}
				return
			}
			if m != nil || len(rej) == 0 {
				t.Fatalf("want bad_manifest, got manifest %+v", m)
			}
			for _, r := range rej {
				if r.Code != CodeBadManifest {
					t.Errorf("code %q, want bad_manifest", r.Code)
				}
			}
			if !strings.Contains(rej[0].Message, tt.wantErr) {
				t.Errorf("message %q does not mention %q", rej[0].Message, tt.wantErr)
			}
		})
	}
}

// TestReadSourceRefusesAFIFO: a FIFO as the manifest or the module (a
// package archive can carry one) is refused by type, at once; opening it
// waited for a writer forever, and SIGINT and SIGTERM were ignored.
func TestReadSourceRefusesAFIFO(t *testing.T) {
	for _, name := range []string{ManifestFile, ModuleFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, ManifestFile), `{"abi":1}`)
			writeFile(t, filepath.Join(dir, ModuleFile), "\x00asm\x01\x00\x00\x00")
			os.Remove(filepath.Join(dir, name))
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			done := make(chan struct{})
			var src *Source
			var err error
			go func() {
				defer close(done)
				src, err = ReadSource(dir, 1<<20)
			}()
			select {
			case <-done:
			case <-time.After(time.Minute): // a bound on a hang, not a measure
				t.Fatal("ReadSource waited on the FIFO")
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(src.Rejections) != 1 || !strings.Contains(src.Rejections[0].Message, name+" is not a regular file (it is a FIFO)") {
				t.Errorf("rejections %v", src.Rejections)
			}
		})
	}
}

func TestParseManifestReportsEveryProblem(t *testing.T) {
	_, rej := ParseManifest([]byte(`{"abi":3,"name":1,"description":false}`))
	if len(rej) != 3 {
		t.Fatalf("want 3 problems (abi, name, description), got %v", rej)
	}
}

func TestParseManifestOver64KiB(t *testing.T) {
	big := `{"abi":1,"description":"` + strings.Repeat("x", 64<<10) + `"}`
	_, rej := ParseManifest([]byte(big))
	if len(rej) != 1 || !strings.Contains(rej[0].Message, "64 KiB") {
		t.Fatalf("want one bad_manifest about 64 KiB, got %v", rej)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadSource(t *testing.T) {
	wasmHeader := "\x00asm\x01\x00\x00\x00"
	t.Run("directory without assets", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, ManifestFile), `{"abi":1}`)
		writeFile(t, filepath.Join(dir, ModuleFile), wasmHeader)
		src, err := ReadSource(dir, 1<<20)
		if err != nil || len(src.Rejections) > 0 {
			t.Fatalf("ReadSource: %v %v", err, src.Rejections)
		}
		if src.HasAssets || src.Dir != dir || string(src.Module) != wasmHeader {
			t.Fatalf("got %+v", src)
		}
	})
	t.Run("nested asset counts", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, ManifestFile), `{"abi":1}`)
		writeFile(t, filepath.Join(dir, ModuleFile), wasmHeader)
		if err := os.MkdirAll(filepath.Join(dir, "empty", "dirs"), 0o755); err != nil {
			t.Fatal(err)
		}
		src, _ := ReadSource(dir, 1<<20)
		if src.HasAssets {
			t.Fatal("empty directories are not assets")
		}
		writeFile(t, filepath.Join(dir, "assets", "logo.png"), "png")
		src, _ = ReadSource(dir, 1<<20)
		if !src.HasAssets {
			t.Fatal("assets/logo.png not seen as an asset")
		}
	})
	t.Run("bare wasm", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "m.wasm")
		writeFile(t, path, wasmHeader)
		src, err := ReadSource(path, 1<<20)
		if err != nil || src.Manifest != nil || src.HasAssets || src.Dir != "" || len(src.Rejections) > 0 {
			t.Fatalf("got %+v, %v", src, err)
		}
	})
	t.Run("missing manifest and module", func(t *testing.T) {
		src, err := ReadSource(t.TempDir(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		codes := map[string]bool{}
		for _, r := range src.Rejections {
			codes[r.Code] = true
		}
		if !codes[CodeBadManifest] || !codes[CodeMissingModule] {
			t.Fatalf("want bad_manifest and missing_module, got %v", src.Rejections)
		}
	})
	t.Run("missing path is an error", func(t *testing.T) {
		if _, err := ReadSource(filepath.Join(t.TempDir(), "nope"), 1<<20); err == nil {
			t.Fatal("want an error")
		}
	})
}

// A module over the limit is refused from its size alone: the test makes a
// sparse 64 MiB + 1 file, which reading would have to materialise.
func TestReadSourceRefusesOversizedModuleWithoutReadingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.wasm")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 64 << 20
	if err := f.Truncate(limit + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src, err := ReadSource(path, limit)
	if err != nil {
		t.Fatal(err)
	}
	if src.Module != nil {
		t.Fatal("the oversized module was read into memory")
	}
	if len(src.Rejections) != 1 || src.Rejections[0].Code != CodeModuleTooLarge || !strings.Contains(src.Rejections[0].Message, "67108865") {
		t.Fatalf("want module_too_large naming the size, got %v", src.Rejections)
	}
}

func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{`{"abi":1}`, `{"abi":1,"name":"x","extra":[1,2]}`, `{"abi":"1"}`, `[]`, `{`, `{"abi":1e0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, rej := ParseManifest(b)
		if (m == nil) == (len(rej) == 0) {
			t.Fatalf("exactly one of manifest and rejections must be set: %v %v", m, rej)
		}
		if m != nil && m.ABI != 1 {
			t.Fatalf("accepted a manifest with abi %d", m.ABI)
		}
	})
}

// The codes are a public contract (cli.md): pin their spelling here, where
// a rename in the package that owns one would otherwise go unnoticed.
func TestCodesAreTheContractsSpelling(t *testing.T) {
	codes := map[string]string{
		CodeNotWasm: "not_wasm", CodeComponent: "component", CodeModuleTooLarge: "module_too_large",
		CodeInvalidModule: "invalid_module", CodeThreads: "threads", CodeExceptions: "exceptions",
		CodeMissingStart: "missing_start", CodeBadStartSignature: "bad_start_signature", CodeReactor: "reactor",
		CodeMissingMemory: "missing_memory", CodeUnknownImport: "unknown_import", CodeImportSignature: "import_signature",
		CodeNonFunctionImport: "non_function_import", CodeMemoryTooLarge: "memory_too_large",
		CodeDiscoverUnsupported: "discover_unsupported", CodeInvalidTool: "invalid_tool", CodeDuplicateTool: "duplicate_tool",
		CodeNoTools: "no_tools", CodeTooManyPages: "too_many_pages",
		CrashJSONRPCError: "jsonrpc_error", CrashResultNotComplete: "result_not_complete", CrashNotJSONRPC: "not_jsonrpc",
		CrashUnexpectedID: "unexpected_id", CrashServerRequest: "server_request", CrashInvalidResult: "invalid_result",
		CrashOutputTooLarge: "output_too_large",
	}
	for got, want := range codes {
		if got != want {
			t.Errorf("code %q, want %q", got, want)
		}
	}
}
