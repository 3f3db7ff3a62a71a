//go:build !unix

package worker

import (
	"io"
	"os"
	"os/exec"
	"sync/atomic"
)

const supported = false

func startProcess(string, []string, []string, io.Writer) (*exec.Cmd, *os.File, error) {
	return nil, nil, errUnsupported
}

func killProcess(cmd *exec.Cmd) { cmd.Process.Kill() }

func channelFile(int) (*os.File, bool) { return nil, false }

func newSpinReader(f *os.File, _ func() (pollMode, bool), _ *atomic.Int32) reader {
	return plainReader{f}
}

func newBlockingReader(f *os.File, _ func() (pollMode, bool), _ *atomic.Int32) reader {
	return plainReader{f}
}
