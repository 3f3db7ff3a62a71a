// Command basics prints what a guest sees of its arguments, environment,
// clocks and randomness, then exits with the code named by its last
// argument ("exit=N").
package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	fmt.Printf("args=%q\n", os.Args)
	fmt.Printf("env=%q\n", os.Environ())
	t0 := time.Now()
	time.Sleep(20 * time.Millisecond)
	fmt.Printf("slept_ms_at_least_20=%v\n", time.Since(t0) >= 20*time.Millisecond)
	fmt.Printf("year_ok=%v\n", time.Now().Year() >= 2024)
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		fmt.Println("rand error:", err)
	}
	nonzero := 0
	for _, c := range b {
		if c != 0 {
			nonzero++
		}
	}
	fmt.Printf("rand_nonzero_ok=%v\n", nonzero > 16)
	stat, err := os.Stdout.Stat()
	if err == nil {
		fmt.Printf("stdout_mode=%v\n", stat.Mode()&os.ModeCharDevice != 0)
	}
	last := os.Args[len(os.Args)-1]
	if strings.HasPrefix(last, "exit=") {
		n, _ := strconv.Atoi(strings.TrimPrefix(last, "exit="))
		os.Exit(n)
	}
}
