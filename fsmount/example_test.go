//go:build unix

package fsmount_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/subako/subako-runner/fsmount"
)

// Two calls sharing a volume each have a Set of their own on its
// directory; Lock makes one wait while the other holds the directory.
func ExampleSet_Lock() {
	dir, err := os.MkdirTemp("", "volume")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	callA, _ := fsmount.Open([]fsmount.Mount{{Guest: fsmount.GuestData, Host: dir}})
	defer callA.Close()
	callB, _ := fsmount.Open([]fsmount.Mount{{Guest: fsmount.GuestData, Host: dir}})
	defer callB.Close()

	release, err := callA.Lock(context.Background(), 0)
	if err != nil {
		panic(err)
	}
	// Call B's wait ends with its context while A holds the lock.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = callB.Lock(ctx, 0)
	fmt.Println("B while A holds it:", err)

	release()
	releaseB, err := callB.Lock(context.Background(), 0)
	fmt.Println("B after A released it:", err)
	releaseB()
	// Output:
	// B while A holds it: context deadline exceeded
	// B after A released it: <nil>
}
