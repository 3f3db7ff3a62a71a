// Command echo answers each stdin line from another goroutine, after a
// short sleep, while stdin stays open: the pattern of the official MCP Go
// SDK, which needs non-blocking stdin and poll_oneoff to work on wasip1.
package main

import (
	"bufio"
	"fmt"
	"os"
	"sync"
	"time"
)

func main() {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for l := range lines {
		wg.Add(1)
		go func(l string) {
			defer wg.Done()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			fmt.Println("echo:", l)
			mu.Unlock()
		}(l)
	}
	wg.Wait()
	fmt.Fprintln(os.Stderr, "bye")
}
