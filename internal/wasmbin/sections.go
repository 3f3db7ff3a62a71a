package wasmbin

import "fmt"

// SectionID identifies a section.
type SectionID byte

// Section ids of the core spec and the exception-handling proposal.
const (
	SectionCustom    SectionID = 0
	SectionType      SectionID = 1
	SectionImport    SectionID = 2
	SectionFunction  SectionID = 3
	SectionTable     SectionID = 4
	SectionMemory    SectionID = 5
	SectionGlobal    SectionID = 6
	SectionExport    SectionID = 7
	SectionStart     SectionID = 8
	SectionElement   SectionID = 9
	SectionCode      SectionID = 10
	SectionData      SectionID = 11
	SectionDataCount SectionID = 12
	SectionTag       SectionID = 13
)

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count", "tag"}

// String returns the section's name ("code", "data count").
func (id SectionID) String() string {
	if int(id) < len(sectionNames) {
		return sectionNames[id]
	}
	return fmt.Sprintf("unknown section %d", byte(id))
}

// order ranks the non-custom sections in the order the spec requires; the
// tag section sits between memory and global, data count between element
// and code.
func (id SectionID) order() int {
	switch id {
	case SectionType:
		return 1
	case SectionImport:
		return 2
	case SectionFunction:
		return 3
	case SectionTable:
		return 4
	case SectionMemory:
		return 5
	case SectionTag:
		return 6
	case SectionGlobal:
		return 7
	case SectionExport:
		return 8
	case SectionStart:
		return 9
	case SectionElement:
		return 10
	case SectionDataCount:
		return 11
	case SectionCode:
		return 12
	case SectionData:
		return 13
	}
	return 0
}

// Section is one section of a module. Offsets are absolute. b[Offset:End]
// is the whole section (id, size, payload), so a rewriter can copy it
// verbatim.
type Section struct {
	ID SectionID
	// Name is the name of a custom section.
	Name string
	// Offset is the offset of the id byte; End is one past the last byte.
	Offset, End int
	// ContentOffset is where Content starts: just after the size for known
	// sections, just after the name for custom sections.
	ContentOffset int
	Content       []byte
}

// ReadSections parses the header and splits the rest of b into sections.
// It checks sizes and names only, not contents nor order. On error it
// returns the sections read before the failure.
func ReadSections(b []byte) ([]Section, error) {
	if _, err := ParseHeader(b); err != nil {
		return nil, err
	}
	r := &reader{b: b, pos: HeaderSize}
	// A section takes at least 2 bytes; the cap bounds the slice by the input.
	secs := make([]Section, 0, min(16, (len(b)-HeaderSize)/2))
	for r.remaining() > 0 {
		start := r.pos
		id, _ := r.byte("section id")
		if id > byte(SectionTag) {
			return secs, errAt(start, nil, "unknown section id %d", id)
		}
		size, err := r.u32("section size")
		if err != nil {
			return secs, err
		}
		if int64(size) > int64(r.remaining()) {
			return secs, errAt(start, ErrUnexpectedEnd, "%s section of %d bytes runs past the end of the module (%d bytes left)", SectionID(id), size, r.remaining())
		}
		s := Section{ID: SectionID(id), Offset: start, End: r.pos + int(size), ContentOffset: r.pos}
		s.Content = b[r.pos:s.End:s.End]
		if s.ID == SectionCustom {
			cr := &reader{b: s.Content, base: s.ContentOffset}
			name, err := cr.name("custom section name")
			if err != nil {
				return secs, err
			}
			s.Name = name
			s.ContentOffset += cr.pos
			s.Content = s.Content[cr.pos:]
		}
		r.pos = s.End
		secs = append(secs, s)
	}
	return secs, nil
}
