package fuel

import "github.com/subako/subako-runner/internal/wasmbin"

// names rewrites the content of the name section: the subsections keyed
// by function index (1 function names, 2 local names, 3 label names) get
// remapped indices; the data segment names (9) are dropped when joinData
// renumbered the segments; the others are copied. ok is false when the section
// does not parse, and then the caller drops it rather than keep names that
// point at the wrong functions.
func (rw *rewriter) names(content []byte) (out []byte, ok bool) {
	out = make([]byte, 0, len(content)+16)
	p := 0
	for p < len(content) {
		id := content[p]
		size, n, err := wasmbin.ReadU32(content[p+1:])
		if err != nil || uint64(size) > uint64(len(content)-p-1-n) {
			return nil, false
		}
		body := content[p+1+n : p+1+n+int(size)]
		p += 1 + n + int(size)
		switch id {
		case 1, 2, 3:
			nb, ok := rw.nameMapByFunc(body, id != 1)
			if !ok {
				return nil, false
			}
			out = append(out, id)
			out = wasmbin.AppendU32(out, uint32(len(nb)))
			out = append(out, nb...)
		case 9:
			if rw.data == nil {
				out = append(out, content[p-int(size)-1-n:p]...)
			}
		default:
			out = append(out, content[p-int(size)-1-n:p]...)
		}
	}
	return out, true
}

// nameMapByFunc remaps the keys of a name map (indirect: each value is
// itself a name map, copied verbatim). Keys are in increasing order and
// the remap is monotonic, so the order holds.
func (rw *rewriter) nameMapByFunc(b []byte, indirect bool) ([]byte, bool) {
	cnt, p, err := wasmbin.ReadU32(b)
	if err != nil {
		return nil, false
	}
	out := make([]byte, 0, len(b)+int(min(cnt, uint32(len(b)))))
	out = wasmbin.AppendU32(out, cnt)
	for i := uint32(0); i < cnt; i++ {
		idx, n, err := wasmbin.ReadU32(b[p:])
		if err != nil {
			return nil, false
		}
		p += n
		out = wasmbin.AppendU32(out, rw.fn(idx))
		start := p
		var ok bool
		if indirect {
			if p, ok = skipNameMap(b, p); !ok {
				return nil, false
			}
		} else if p, ok = skipName(b, p); !ok {
			return nil, false
		}
		out = append(out, b[start:p]...)
	}
	if p != len(b) {
		return nil, false
	}
	return out, true
}

func skipName(b []byte, p int) (int, bool) {
	l, n, err := wasmbin.ReadU32(b[p:])
	if err != nil || uint64(l) > uint64(len(b)-p-n) {
		return 0, false
	}
	return p + n + int(l), true
}

func skipNameMap(b []byte, p int) (int, bool) {
	cnt, n, err := wasmbin.ReadU32(b[p:])
	if err != nil {
		return 0, false
	}
	p += n
	for i := uint32(0); i < cnt; i++ {
		_, n, err := wasmbin.ReadU32(b[p:])
		if err != nil {
			return 0, false
		}
		var ok bool
		if p, ok = skipName(b, p+n); !ok {
			return 0, false
		}
	}
	return p, true
}
