package runtime_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/subako/subako-runner/runtime"
)

// serve calls one tool of the package the embedder stored under key,
// through a set that keeps the open packages within a budget.
func serve(ctx context.Context, rt *runtime.Runtime, store runtime.DirLoader, key string) error {
	set, err := runtime.NewPackageSet(rt, runtime.PackageSetConfig{
		Loader:   store,     // artifact in store.Artifacts/<key>, package in store.Packages/<key>
		MaxBytes: 256 << 20, // estimated resident bytes of the open packages
	})
	if err != nil {
		return err
	}
	defer set.Close(ctx) // waits for the calls in flight, then closes every package
	res, err := set.Call(ctx, key, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	if err != nil {
		return err
	}
	defer res.Release()
	st := set.Stats()
	fmt.Println(res.Outcome, res.View[0].Text, st.Opens, st.Resident)
	return nil
}

func Example_packageSet() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "subako-set-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: filepath.Join(root, "cache")})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	// The upload, once: the package under its key, its artifact beside.
	store := runtime.DirLoader{Artifacts: filepath.Join(root, "artifacts"), Packages: filepath.Join(root, "packages")}
	dir := filepath.Join(store.Packages, "ada-greets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{runtime.ModuleFile, runtime.ManifestFile} {
		b, err := os.ReadFile(filepath.Join("../testdata/packages/cgreet", name))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	pkg, err := rt.Load(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Save("ada-greets", pkg); err != nil {
		log.Fatal(err)
	}
	pkg.Close(ctx)
	if err := serve(ctx, rt, store, "ada-greets"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ok {"message":"Hello, Ada!"} 1 1
}
