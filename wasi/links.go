package wasi

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Symbolic links a guest makes must lead nowhere outside their mount, not
// only for the guest (os.Root confines every path it resolves) but for the
// host: a kept /volume/tmp or /volume/data is read by host tools with plain
// path APIs. The rule that keeps that true whatever the guest does next:
//
//   - a link's target is relative, its ".." components all come first, and
//     there are at most maxLinkClimb of them and at most as many as the
//     link's directory lies below the
//     mount root, counted on the directory's real path (the kernel's, which
//     neither a guest path through links nor a moved descriptor fools);
//   - path_rename and path_link judge a moved link again from its new
//     directory, and a directory moved closer to the mount root has the
//     links beneath it judged again;
//   - the check and the act are one step for every call sharing the
//     volume: both happen under the mount's lock (fsmount.Set.Lock), in
//     the directories one resolution opened.
//
// With ".." only in front, resolution climbs a real path inside the mount
// and then only descends, through names that are directories or links
// obeying the same rule, so it cannot leave. A "name/.." target is refused
// because the name may be (or later become) a link, after which ".." climbs
// from wherever that link leads. Refusals are ENOTCAPABLE, as for any path
// that would leave its directory.

// maxLinkClimb is the most ".." a new link's target may start with. It
// bounds how deep a directory move must look for links it could break
// (links made by earlier calls in /volume/data included), and real
// relative links climb a few levels, not dozens.
const maxLinkClimb = 64

// linkUp is how many ".." components lead target's path, and whether the
// target obeys the form of the rule (relative, ".." only in front).
func linkUp(target string) (up int, ok bool) {
	if path.IsAbs(target) {
		return 0, false
	}
	named := false
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return 0, false
			}
			up++
		default:
			named = true
		}
	}
	return up, true
}

// linkEscapes reports whether a link to target in a directory depth levels
// below the mount root could resolve outside the mount.
func linkEscapes(target string, depth int) bool {
	up, ok := linkUp(target)
	return !ok || up > depth
}

// parentOf is the directory that name's last component is made in.
func parentOf(name string) string {
	return path.Dir(strings.TrimRight(name, "/"))
}

// depthOf is how many directories below the root of mount the directory
// a resolution ended in really is. Where the host cannot tell (no /proc, a
// directory removed meanwhile), it answers 0, which allows only targets
// without "..".
func (in *Instance) depthOf(at resolved, mount int) (int, errnum) {
	d, err := at.dir.Open(".")
	if err != nil {
		return 0, errnoOf(err)
	}
	defer d.Close()
	rel, ok := in.mountRel(d, mount)
	if !ok || rel == "." {
		return 0, errnoSuccess
	}
	return strings.Count(rel, "/") + 1, errnoSuccess
}

// mountRel is the kernel's path of the open directory d relative to the
// root of mount ("." for the root itself), when the host can tell.
func (in *Instance) mountRel(d *os.File, mount int) (string, bool) {
	root, errno := in.mountRoot(mount)
	if errno != errnoSuccess {
		return "", false
	}
	m, err := root.Open(".")
	if err != nil {
		return "", false
	}
	defer m.Close()
	dp, ok := hostPath(d)
	mp, mok := hostPath(m)
	mp = strings.TrimSuffix(mp, "/")
	switch {
	case !ok || !mok:
		return "", false
	case dp == mp:
		return ".", true
	case strings.HasPrefix(dp, mp+"/"):
		return dp[len(mp)+1:], true
	}
	return "", false
}

// lockLinks takes the lock of mount (fsmount.Set.Lock) that makes a
// link's check and its making, or a move's check and the move, one step
// for every call sharing the volume. errnoIntr: ctx ended while it waited.
func (in *Instance) lockLinks(ctx context.Context, mount int) (func(), errnum) {
	if in.cfg.Mounts == nil {
		return nil, errnoBadf
	}
	release, err := in.cfg.Mounts.Lock(ctx, mount)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errnoIntr
		}
		return nil, errnoOf(err)
	}
	return release, errnoSuccess
}

// makeSymlink makes a path_symlink of target at name beneath root, the
// directory of descriptor dir, by the rule above. A link that climbs is
// judged and made under the mount's lock, in the directory the resolution
// opened, so no move of another call and no name changed in between can
// put it anywhere else; one that does not climb obeys the rule anywhere.
// The new entry and its target's length are charged to the write budget.
func (in *Instance) makeSymlink(ctx context.Context, dir *fdEntry, root *os.Root, target, name string) errnum {
	up, ok := linkUp(target)
	if !ok || up > maxLinkClimb {
		return errnoNotcapable
	}
	if up > 0 {
		release, errno := in.lockLinks(ctx, dir.mount)
		if errno != errnoSuccess {
			return errno
		}
		defer release()
	}
	at, errno := resolvePath(ctx, root, name, false)
	if errno != errnoSuccess {
		return errno
	}
	defer at.release()
	if up > 0 {
		depth, errno := in.depthOf(at, dir.mount)
		if errno != errnoSuccess {
			return errno
		}
		if up > depth {
			return errnoNotcapable
		}
	}
	if in.beforeLinkAct != nil {
		in.beforeLinkAct()
	}
	if !in.reserveEntry(len(target)) {
		return errnoDquot
	}
	err := at.dir.Symlink(target, at.base)
	if err != nil {
		in.refundEntry(len(target))
	}
	return errnoOf(err)
}

// move does a path_rename (rename set) or path_link of oldName to newName
// beneath root, resolved from descriptor fd, under the mount's lock: a
// link must obey the rule from its new directory, and a directory moved
// closer to the mount root must not carry a link that then would break
// it. The check reads the directories the resolution opened and the act
// happens in them (renameAt, linkAt), so what was judged is what moves.
// A link made with symlink_follow on a symbolic link is EINVAL (os.Root
// cannot link what a link names, nor can linkat beneath a root).
func (in *Instance) move(ctx context.Context, fd uint32, root *os.Root, oldName, newName string, rename, follow bool) errnum {
	e, errno := in.get(fd)
	if errno != errnoSuccess {
		return errno
	}
	release, errno := in.lockLinks(ctx, e.mount)
	if errno != errnoSuccess {
		return errno
	}
	defer release()
	from, errno := resolvePath(ctx, root, oldName, false)
	if errno != errnoSuccess {
		return errno
	}
	defer from.release()
	to, errno := resolvePath(ctx, root, newName, false)
	if errno != errnoSuccess {
		return errno
	}
	defer to.release()
	info, err := from.dir.Lstat(from.base)
	if follow && err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return errnoInval
	}
	if err == nil {
		if errno := in.checkMove(ctx, e.mount, from, to, info, rename); errno != errnoSuccess {
			return errno
		}
	}
	if in.beforeLinkAct != nil {
		in.beforeLinkAct()
	}
	if rename {
		return errnoOf(renameAt(root, from, to))
	}
	if !in.reserveEntry(0) {
		return errnoDquot
	}
	err = linkAt(root, from, to)
	if err != nil {
		in.refundEntry(0)
	}
	return errnoOf(err)
}

// checkMove judges a move of from (whose Lstat is info) to to.
func (in *Instance) checkMove(ctx context.Context, mount int, from, to resolved, info fs.FileInfo, rename bool) errnum {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := from.dir.Readlink(from.base)
		if err != nil {
			return errnoOf(err)
		}
		if up, ok := linkUp(target); ok && up == 0 {
			return errnoSuccess
		}
		depth, errno := in.depthOf(to, mount)
		if errno != errnoSuccess {
			return errno
		}
		if linkEscapes(target, depth) {
			return errnoNotcapable
		}
	case rename && info.IsDir():
		oldDepth, errno := in.depthOf(from, mount)
		if errno != errnoSuccess {
			return errno
		}
		newDepth, errno := in.depthOf(to, mount)
		if errno != errnoSuccess {
			return errno
		}
		if newDepth >= oldDepth {
			return errnoSuccess
		}
		// A link k directories below the moved one lies newDepth+1+k deep
		// and climbs at most maxLinkClimb: below maxLinkClimb-newDepth-1
		// levels none can reach past the root, so the walk stops there.
		return walkLinks(ctx, from.dir, strings.TrimRight(from.base, "/"), newDepth+1, maxLinkClimb-newDepth-1)
	}
	return errnoSuccess
}

// walkLinks checks the links in dir and in its subdirectories up to levels
// deep (0: none), dir's own entries lying depth directories below the
// mount root. It holds one directory open at a time.
func walkLinks(ctx context.Context, root *os.Root, dir string, depth, levels int) errnum {
	type item struct {
		rel string
		k   int
	}
	stack := []item{{dir, 0}}
	for len(stack) > 0 && levels > 0 {
		if ctx.Err() != nil {
			return errnoIntr
		}
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f, err := root.Open(it.rel)
		if err != nil {
			return errnoOf(err)
		}
		for {
			es, err := f.ReadDir(256)
			for _, de := range es {
				p := it.rel + "/" + de.Name()
				switch {
				case de.Type()&fs.ModeSymlink != 0:
					target, err := root.Readlink(p)
					if err != nil || linkEscapes(target, depth+it.k) {
						f.Close()
						return errnoNotcapable
					}
				case de.IsDir() && it.k+1 < levels:
					stack = append(stack, item{p, it.k + 1})
				}
			}
			if err == io.EOF || (err == nil && len(es) == 0) {
				break
			}
			if err != nil {
				f.Close()
				return errnoOf(err)
			}
		}
		f.Close()
	}
	return errnoSuccess
}

// reserveEntry charges one new directory entry (and extra bytes, a link's
// target) to the call's write budget; false means EDQUOT.
func (in *Instance) reserveEntry(extra int) bool {
	return in.cfg.Budget == nil || in.cfg.Budget.ReserveEntry(int64(extra))
}

// refundEntry gives back a reserveEntry whose entry was not made.
func (in *Instance) refundEntry(extra int) {
	if in.cfg.Budget != nil {
		in.cfg.Budget.RefundEntry(int64(extra))
	}
}

// realRel is the path of directory descriptor e relative to its mount's
// root as the directory is now, which a rename since its opening changes;
// where the host cannot tell, the path it was opened by.
func (in *Instance) realRel(e *fdEntry) string {
	root, errno := in.dirRoot(e)
	if errno != errnoSuccess {
		return e.rel
	}
	d, err := root.Open(".")
	if err != nil {
		return e.rel
	}
	defer d.Close()
	if rel, ok := in.mountRel(d, e.mount); ok {
		return rel
	}
	return e.rel
}
