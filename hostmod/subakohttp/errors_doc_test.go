package subakohttp

import (
	"encoding/json"
	"testing"
)

// Document is the error document request answers, byte for byte the
// shape a guest parses.
func TestErrorDocument(t *testing.T) {
	doc := (&Error{Kind: KindConnection, Message: "a <b> & c"}).Document()
	var got map[string]map[string]string
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	if e := got["error"]; e["kind"] != "connection" || e["message"] != "a <b> & c" || len(got) != 1 {
		t.Fatalf("document %s", doc)
	}
	if string(doc) != string(errorResponse(errorf(KindConnection, "a <b> & c"))) {
		t.Fatalf("Document differs from the host function's own error document: %s", doc)
	}
}
