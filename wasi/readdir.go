package wasi

import (
	"context"
	"io"
	"os"

	"github.com/tetratelabs/wazero/api"
)

// dirChunk is how many entries fd_readdir reads from the host at a time,
// and so the most one directory descriptor keeps between calls.
const dirChunk = 32

type dirent struct {
	name string
	ino  uint64
	typ  uint8
}

// dirReader is the fd_readdir state of one directory descriptor: a handle
// on the directory, positioned after the entries read so far, and the last
// chunk read (window), whose first entry has cookie start. Cookies number
// the entries in the order the host directory yields them: 0 is ".", 1 is
// "..", then 2, 3, ... The host never holds a whole listing: a descriptor
// costs at most dirChunk entries and, while its listing is being read, one
// host descriptor and its read buffer (8 KiB), so all the descriptors of
// an instance together stay within MaxFiles times that, however large the
// directories.
type dirReader struct {
	f      *os.File
	start  uint64
	window []dirent
	eof    bool
}

// close drops the handle and the position: the next read starts afresh.
func (r *dirReader) close() {
	if r == nil {
		return
	}
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	r.eof = false
}

// rewind reopens the directory: the listing then reflects its current
// contents, as rewinddir promises.
func (r *dirReader) rewind(root *os.Root) error {
	r.close()
	f, err := root.Open(".")
	if err != nil {
		return err
	}
	self, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	_, ino, _, _, _ := statIDs(self)
	r.f, r.start, r.eof = f, 0, false
	r.window = append(r.window[:0], dirent{".", ino, filetypeDirectory}, dirent{"..", 0, filetypeDirectory})
	return nil
}

// next replaces the window with the next chunk of entries.
func (r *dirReader) next() error {
	entries, err := r.f.ReadDir(dirChunk)
	r.start += uint64(len(r.window))
	r.window = r.window[:0]
	for _, de := range entries {
		info, err := de.Info()
		if err != nil {
			continue // removed since it was read
		}
		_, ino, _, _, _ := statIDs(info)
		r.window = append(r.window, dirent{de.Name(), ino, fileType(info.Mode())})
	}
	if err == io.EOF || len(entries) == 0 {
		// The last chunk stays for cookies in it; the host descriptor
		// goes, so a listing read to its end holds none.
		r.eof = true
		r.f.Close()
		r.f = nil
		return nil
	}
	return err
}

// seek makes cookie fall in the window, reading forward (or again from the
// start) as needed; ok is false past the last entry. Reading forward
// checks the context after each chunk.
func (r *dirReader) seek(ctx context.Context, mod api.Module, root *os.Root, cookie uint64) (ok bool, err error) {
	if (r.f == nil && !r.eof) || cookie < r.start {
		if err := r.rewind(root); err != nil {
			return false, err
		}
	}
	for cookie >= r.start+uint64(len(r.window)) {
		if r.eof {
			return false, nil
		}
		if err := r.next(); err != nil {
			return false, err
		}
		checkContext(ctx, mod)
	}
	return true, nil
}

// fdReaddir lists a directory: ".", "..", then the entries in the host
// directory's order. Entry i has d_next = i+1, so a cookie is the index
// of the next entry. Cookie 0 reads the directory afresh; a cookie in or
// just after the chunk last read (a guest continuing, or retrying a
// truncated entry) costs one chunk at most; any other cookie reads again
// from the start.
func fdReaddir(ctx context.Context, in *Instance, mod api.Module, p []uint64) errnum {
	e, errno := in.get(uint32(p[0]))
	if errno != errnoSuccess {
		return errno
	}
	m := memOf(mod)
	bufPtr, bufLen, cookie, resPtr := uint32(p[1]), uint32(p[2]), p[3], uint32(p[4])
	buf, ok := m.slice(bufPtr, bufLen)
	if !ok || !m.ok(resPtr, 4) {
		return errnoFault
	}
	switch {
	case e.kind != kindDir:
		return errnoNotdir
	case e.base&rightFdReaddir == 0:
		return errnoNotcapable
	}
	root, errno := in.dirRoot(e)
	if errno != errnoSuccess {
		return errno
	}
	if e.dir == nil {
		e.dir = &dirReader{}
	}
	r := e.dir
	if cookie == 0 {
		r.close()
	}
	used := uint32(0)
	for ; used < bufLen; cookie++ {
		ok, err := r.seek(ctx, mod, root, cookie)
		if err != nil {
			if used > 0 {
				break // report what was read; the error comes again next call
			}
			return errnoOf(err)
		}
		if !ok {
			break
		}
		d := r.window[cookie-r.start]
		var h [sizeDirent]byte
		le64(h[0:], cookie+1)
		le64(h[8:], d.ino)
		le32(h[16:], uint32(len(d.name)))
		h[20] = d.typ
		used += uint32(copy(buf[used:], h[:]))
		used += uint32(copy(buf[used:], d.name))
	}
	m.putU32(resPtr, used)
	return errnoSuccess
}
