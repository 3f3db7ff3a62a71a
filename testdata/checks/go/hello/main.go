// Command hello is the valid Go fixture of the module checks: a plain
// GOOS=wasip1 command (which imports fd_write twice, among others).
package main

import "fmt"

func main() {
	fmt.Println("hello from a Go wasip1 module")
}
