package wasmbin

// FuncName looks up function idx in the content of a "name" custom section
// (Section.Content of the section named "name"). It scans instead of
// building a map because callers name one or two functions in an error
// message; a malformed name section simply yields no name.
func FuncName(nameSection []byte, idx uint32) (string, bool) {
	r := &reader{b: nameSection}
	for r.remaining() > 0 {
		id, _ := r.byte("name subsection id")
		size, err := r.u32("name subsection size")
		if err != nil {
			return "", false
		}
		body, err := r.bytes(int(size), "name subsection")
		if err != nil {
			return "", false
		}
		if id != 1 {
			continue
		}
		sr := &reader{b: body}
		n, err := sr.count("function name", 2)
		if err != nil {
			return "", false
		}
		for i := 0; i < n; i++ {
			k, err := sr.u32("function index")
			if err != nil {
				return "", false
			}
			if k != idx {
				l, err := sr.u32("function name length")
				if err != nil {
					return "", false
				}
				if _, err := sr.bytes(int(l), "function name"); err != nil {
					return "", false
				}
				continue
			}
			name, err := sr.name("function name")
			return name, err == nil
		}
		return "", false
	}
	return "", false
}
