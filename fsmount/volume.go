package fsmount

import (
	"fmt"
	"strings"

	"github.com/subako/subako-runner/internal/text"
)

// CheckVolumePath is the one lexical rule of a file path the host opens on
// a module's behalf (subako_http bodies and outputs, volume:/// links in
// the model view): absolute, clean (no empty, "." or ".." segment, no
// trailing slash), without a NUL byte, and strictly under /volume/tmp/ or
// /volume/data/. It returns nil, or an error that quotes the path (cut to
// 200 bytes) and says why, for the caller to add its remedy to.
//
// It only picks out paths that name a volume mount at all; confinement
// inside the mount (symbolic links, "..") is os.Root's job, through
// Set.OpenFile.
func CheckVolumePath(p string) error {
	bad := func(why string) error {
		return fmt.Errorf("%q %s", text.Bound(p, 200), why)
	}
	if !strings.HasPrefix(p, "/") {
		return bad("is not absolute")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return bad("contains a NUL byte")
	}
	for _, seg := range strings.Split(p, "/")[1:] {
		if seg == "" || seg == "." || seg == ".." {
			return bad(`is not in clean form (no "..", ".", "//" or trailing slash)`)
		}
	}
	if !strings.HasPrefix(p, GuestTmp+"/") && !strings.HasPrefix(p, GuestData+"/") {
		return bad("is not under " + GuestTmp + " or " + GuestData)
	}
	return nil
}
