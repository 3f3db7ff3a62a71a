package wasi

import (
	"context"
	"io/fs"
	"os"
	"strings"
)

// Paths are resolved here, once, before os.Root sees them. os.Root resolves
// a ".." by starting again from its root and walking every component before
// it again (it holds one directory at a time), so with a link into a chain
// 2,040 directories deep, one path_filestat_get of L/x/../x/../… reopened
// the chain for every "..": about 18,000 openat, 100 ms, in one host call
// the meter charges 1,000 units. The resolver walks the path with the
// directories it passed still open (the deepest resolveWindow of them), so
// ".." costs nothing, counts every component it looks at, and gives up
// after maxResolveSteps (ENAMETOOLONG, what os.Root answers for a path it
// gives up on). What it hands on is the directory the last component lies
// in, opened, and that component: the operation is a single-component
// os.Root call there, which still confines it (a race that swaps a name
// for a link between the two is confined by that root too).

// maxResolveSteps bounds the components one resolution looks at, links'
// targets and walks back to a closed directory included. A path of
// fsmount.PathMax bytes has at most 2,048 components; the bound leaves it
// room for links, and a path it stops cost at most this many lookups.
const maxResolveSteps = 4096

// maxResolveLinks is the most symbolic links one resolution follows: the
// kernel's bound (ELOOP beyond).
const maxResolveLinks = 40

// resolveWindow is how many of the directories a resolution passed it keeps
// open; a ".." past them reopens from the nearest one still open (or the
// root), which the steps count. It bounds the host descriptors one path
// holds, whatever its depth.
const resolveWindow = 32

// resolveCheckEvery is how many steps pass between looks at the call's
// context.
const resolveCheckEvery = 64

// resolved is a path resolved beneath a root: the directory its last
// component lies in, and that component.
type resolved struct {
	// dir is the directory of the last component: the root itself or a
	// directory opened beneath it, which release closes.
	dir *os.Root
	// base is the last component, with the path's trailing slashes; "."
	// when the path names the root's directory itself.
	base string
	// clean is the path from the root the resolution took: directories
	// only, no "." or "..", no link, then base.
	clean string

	owned bool
}

// release closes the directory the resolution opened.
func (r resolved) release() {
	if r.owned {
		r.dir.Close()
	}
}

// resolveFrame is one directory the resolution went into.
type resolveFrame struct {
	name string
	dir  *os.Root // nil once out of the window
}

// resolver is the state of one resolution.
type resolver struct {
	ctx    context.Context
	root   *os.Root
	frames []resolveFrame
	steps  int
	links  int
}

// resolvePath resolves p (a guest path readPath accepted) beneath root.
// With follow, a symbolic link in the last component is followed too, as
// is one before a trailing slash. A "..": above root is ENOTCAPABLE, as
// os.Root answers. errnoIntr means ctx ended during the walk (the caller
// ends the instance, see bounded). The caller releases what it got.
func resolvePath(ctx context.Context, root *os.Root, p string, follow bool) (resolved, errnum) {
	r := &resolver{ctx: ctx, root: root}
	res, errno := r.walk(p, follow)
	// Every directory but the one handed on is closed.
	for i := range r.frames {
		if d := r.frames[i].dir; d != nil && d != res.dir {
			d.Close()
		}
	}
	return res, errno
}

// split cuts p into its components other than "" and ".", and reports
// whether it ends in a slash.
func splitPath(p string) ([]string, bool) {
	var parts []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	return parts, strings.HasSuffix(p, "/")
}

func (r *resolver) walk(p string, follow bool) (resolved, errnum) {
	parts, slash := splitPath(p)
	for i := 0; i < len(parts); {
		if errno := r.step(); errno != errnoSuccess {
			return resolved{}, errno
		}
		c := parts[i]
		if c == ".." {
			if len(r.frames) == 0 {
				return resolved{}, errnoNotcapable
			}
			if d := r.frames[len(r.frames)-1].dir; d != nil {
				d.Close()
			}
			r.frames = r.frames[:len(r.frames)-1]
			i++
			continue
		}
		last := i == len(parts)-1
		if last && !follow && !slash {
			return r.hand(c, false)
		}
		dir, errno := r.cur()
		if errno != errnoSuccess {
			return resolved{}, errno
		}
		info, err := dir.Lstat(c)
		switch {
		case err != nil && last && os.IsNotExist(err):
			return r.hand(c, slash) // a name to create
		case err != nil:
			return resolved{}, errnoOf(err)
		case info.Mode()&fs.ModeSymlink != 0:
			r.links++
			if r.links > maxResolveLinks {
				return resolved{}, errnoLoop
			}
			target, err := dir.Readlink(c)
			if err != nil {
				return resolved{}, errnoOf(err)
			}
			if strings.HasPrefix(target, "/") {
				return resolved{}, errnoNotcapable // as os.Root: no absolute link leads anywhere inside
			}
			tparts, tslash := splitPath(target)
			if last && tslash {
				slash = true
			}
			parts = append(tparts, parts[i+1:]...)
			i = 0
			continue
		case last:
			return r.hand(c, slash)
		case !info.IsDir():
			return resolved{}, errnoNotdir
		}
		sub, err := dir.OpenRoot(c)
		if err != nil {
			return resolved{}, errnoOf(err)
		}
		r.push(c, sub)
		i++
	}
	// The path ends at a directory the walk went into (or the root).
	if len(r.frames) == 0 {
		return resolved{dir: r.root, base: ".", clean: "."}, errnoSuccess
	}
	top := r.frames[len(r.frames)-1]
	r.frames = r.frames[:len(r.frames)-1]
	if top.dir != nil {
		top.dir.Close()
	}
	return r.hand(top.name, slash)
}

// step counts one component and looks at the context now and then.
func (r *resolver) step() errnum {
	r.steps++
	switch {
	case r.steps > maxResolveSteps:
		return errnoNametoolong
	case r.steps%resolveCheckEvery == 0 && r.ctx.Err() != nil:
		return errnoIntr
	}
	return errnoSuccess
}

// push enters directory name, opened as sub, closing the one that leaves
// the window.
func (r *resolver) push(name string, sub *os.Root) {
	r.frames = append(r.frames, resolveFrame{name, sub})
	if n := len(r.frames) - resolveWindow - 1; n >= 0 && r.frames[n].dir != nil {
		r.frames[n].dir.Close()
		r.frames[n].dir = nil
	}
}

// cur is the directory the walk is in, reopened from the nearest open one
// below when a ".." took the walk out of the window.
func (r *resolver) cur() (*os.Root, errnum) {
	n := len(r.frames)
	if n == 0 {
		return r.root, errnoSuccess
	}
	if d := r.frames[n-1].dir; d != nil {
		return d, errnoSuccess
	}
	from, dir := n-1, r.root
	for from > 0 && r.frames[from-1].dir == nil {
		from--
	}
	if from > 0 {
		dir = r.frames[from-1].dir
	}
	for k := from; k < n; k++ {
		if errno := r.step(); errno != errnoSuccess {
			return nil, errno
		}
		sub, err := dir.OpenRoot(r.frames[k].name)
		if err != nil {
			return nil, errnoOf(err)
		}
		r.frames[k].dir, dir = sub, sub
		if k < n-resolveWindow {
			// Below the window again once the next one is open.
			defer sub.Close()
			r.frames[k].dir = nil
		}
	}
	return dir, errnoSuccess
}

// hand ends the walk at component base of the current directory.
func (r *resolver) hand(base string, slash bool) (resolved, errnum) {
	dir, errno := r.cur()
	if errno != errnoSuccess {
		return resolved{}, errno
	}
	if slash {
		base += "/"
	}
	var b strings.Builder
	for _, f := range r.frames {
		b.WriteString(f.name)
		b.WriteByte('/')
	}
	b.WriteString(base)
	return resolved{dir: dir, base: base, clean: b.String(), owned: dir != r.root}, errnoSuccess
}
