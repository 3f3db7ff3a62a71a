package conformance_test

import (
	"context"
	"fmt"
	"log"

	"github.com/subako/subako-runner/conformance"
	"github.com/subako/subako-runner/runtime"
)

// Check the Rust example package and print a few verdicts. The rest of the
// report (details, evidence, resource profiles) is what WriteHuman,
// WriteJSON and WriteJUnit render.
func Example() {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)
	rep, err := conformance.Run(ctx, rt, "../testdata/packages/rustgreet", conformance.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// (The time checks, such as protocol.eof_exit, are left out here: how
	// long a module takes depends on the machine, and an Example's output
	// must not.)
	for _, id := range []string{"upload.checks", "protocol.id_string", "protocol.id_big_integer", "tools.call_invalid_args/greet", "tools.unknown_tool"} {
		c, _ := rep.Get(id)
		fmt.Println(c.Status, id)
	}
	fmt.Println("passed:", rep.Passed)
	// Output:
	// pass upload.checks
	// pass protocol.id_string
	// pass protocol.id_big_integer
	// pass tools.call_invalid_args/greet
	// warn tools.unknown_tool
	// passed: true
}
