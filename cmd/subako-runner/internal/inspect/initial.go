package inspect

import (
	"bytes"
	"encoding/json"
)

// initialMarker is where index.html takes the package report, so that the
// page is drawn from its first paint: a screenshot taken at the load event
// (chromium --headless --screenshot) shows the package, accepted or
// refused, never "Loading…".
var initialMarker = []byte("{{initial-package}}")

// withInitialPackage puts the current package report into the page. The
// report holds what the package and module sent; json.Marshal escapes <,
// > and & (and U+2028, U+2029), so nothing in it can close the
// <script type="application/json"> element it sits in.
func (s *Server) withInitialPackage(page []byte) []byte {
	report := []byte("null")
	if st := s.current(); st != nil {
		if b, err := json.Marshal(st.report); err == nil {
			report = b
		}
	}
	return bytes.Replace(page, initialMarker, report, 1)
}
