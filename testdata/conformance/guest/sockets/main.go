// Command sockets is conformguest with WASI socket imports (sock_accept)
// and no subako_http: a module that hopes to do network I/O through
// sockets, which ABI 1 never passes.
package main

import (
	"os"
	"syscall"

	"conformguest/serve"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "accept" {
		// Never true under the host (args are ["module.wasm"]); it keeps
		// the sock_accept import in the binary.
		syscall.Accept(3)
	}
	serve.Main()
}
