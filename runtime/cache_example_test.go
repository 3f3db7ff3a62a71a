package runtime_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/subako/subako-runner/runtime"
)

// A compilation cache New cannot use is a warning and a runtime without a
// cache; StrictCompilationCache makes it New's error.
func ExampleConfig_strictCompilationCache() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cache-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	notADir := filepath.Join(dir, "cache")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil { // a file where the cache should be
		log.Fatal(err)
	}
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: notADir})
	fmt.Println("lenient:", err)
	if err == nil {
		rt.Close(ctx)
	}
	_, err = runtime.New(ctx, runtime.Config{CompilationCacheDir: notADir, StrictCompilationCache: true})
	fmt.Println("strict fails:", err != nil)
	// Output:
	// lenient: <nil>
	// strict fails: true
}
