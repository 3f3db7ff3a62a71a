package instance

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/subako/subako-runner/fsmount"
	"github.com/subako/subako-runner/protocol"
)

// VolumeFiles confines file access on behalf of the host (HTTP bodies and
// outputs, volume:/// links in the view) to an instance's /volume mounts.
type VolumeFiles struct{ mounts *fsmount.Set }

// OpenFile implements subakohttp.Files.
func (v VolumeFiles) OpenFile(guestPath string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := fsmount.CheckVolumePath(guestPath); err != nil {
		return nil, err
	}
	return v.mounts.OpenFile(guestPath, flag, perm)
}

// ResolveVolume implements protocol.VolumeResolver. The file is opened
// through the confined mount, and its first bytes are read from that open
// file, so what is sniffed is what the path resolves to inside the mount.
func (v VolumeFiles) ResolveVolume(guestPath string) (protocol.VolumeFile, error) {
	if err := fsmount.CheckVolumePath(guestPath); err != nil {
		return protocol.VolumeFile{}, err
	}
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := v.mounts.OpenFile(guestPath, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return protocol.VolumeFile{}, fmt.Errorf("%s does not exist", guestPath)
		}
		return protocol.VolumeFile{}, fmt.Errorf("%s cannot be opened inside its mount", guestPath)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return protocol.VolumeFile{}, err
	}
	if !info.Mode().IsRegular() {
		return protocol.VolumeFile{}, fmt.Errorf("%s is not a regular file", guestPath)
	}
	head := make([]byte, min(int64(protocol.SniffLen), info.Size()))
	n, _ := io.ReadFull(f, head)
	host, _, err := v.mounts.Stat(guestPath)
	if err != nil {
		return protocol.VolumeFile{}, err
	}
	return protocol.VolumeFile{HostPath: host, Size: info.Size(), Head: head[:n]}, nil
}

// Files is the instance's VolumeFiles: what the view's volume:/// links
// resolve through.
// NewVolumeFiles is the file access of mounts: what a process that runs no
// instance itself (a worker's parent) resolves a call's volume files with.
func NewVolumeFiles(mounts *fsmount.Set) VolumeFiles { return VolumeFiles{mounts} }

func (in *Instance) Files() VolumeFiles { return VolumeFiles{in.Mounts} }
