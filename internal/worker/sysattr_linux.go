package worker

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	// Pdeathsig: the worker dies with the parent (strictly: with the parent's
	// thread that forked it; Go does not retire threads of unlocked goroutines).
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

const rssSupported = true

// rss reads the resident set size from /proc/<pid>/statm (cheap: no
// walk of the mappings, unlike status or smaps).
func rss(pid int) (int64, bool) {
	var buf [128]byte
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, false
	}
	n, _ := f.Read(buf[:])
	f.Close()
	fields := bytes.Fields(buf[:n])
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
