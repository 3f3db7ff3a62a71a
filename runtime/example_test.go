package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/subako/subako-runner/internal/devtools/testguest"
	"github.com/subako/subako-runner/runtime"
)

// Load a package once, then call its tools; a bare .wasm file is a package
// without manifest and assets.
func Example() {
	ctx := context.Background()
	module, err := testguest.BuildGo("../testdata/guests/greet")
	if err != nil {
		log.Fatal(err)
	}

	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	pkg, err := rt.Load(ctx, module) // checks, compile, discovery
	if err != nil {
		log.Fatal(err)
	}
	defer pkg.Close(ctx)

	res, err := pkg.Call(ctx, runtime.CallRequest{Tool: "greet", Arguments: []byte(`{"name":"Ada"}`)})
	if err != nil {
		log.Fatal(err)
	}
	defer res.Release()
	fmt.Println(res.Outcome)
	fmt.Println(res.View[0].Text)
	// Output:
	// ok
	// {"message":"Hello, Ada!"}
}

// A package that fails the upload checks is a *RejectedError listing every
// problem with its stable code.
func ExampleRuntime_Validate() {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	_, err = rt.Validate(ctx, "../testdata/checks/reactor_c.wasm")
	var rej *runtime.RejectedError
	if errors.As(err, &rej) {
		for _, r := range rej.Rejections {
			fmt.Println(r.Code)
		}
	}
	// Output:
	// reactor
	// missing_start
}
