package protocol

import (
	"encoding/json"
	"testing"
)

// greetLine is what the cgreet module answers to a tools/call: the response
// every call of BenchmarkCGreetCall in package runtime classifies.
const greetLine = `{"jsonrpc":"2.0","id":4503599627370497,"result":{"content":[{"type":"text","text":"Hello, Ada!"}],"isError":false}}`

func BenchmarkClassifyCallResponse(b *testing.B) {
	line := []byte(greetLine)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Classify(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckComplete(b *testing.B) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"Hello, Ada!"}],"isError":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckComplete(result); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseCallToolResult(b *testing.B) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"Hello, Ada!"}],"isError":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCallToolResult(result); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeToolsCall(b *testing.B) {
	client := ClientInfo{Name: "subako", Version: "0.2.3"}
	id := IntID(4503599627370497)
	b.ReportAllocs()
	for b.Loop() {
		params, err := ToolsCallParams("greet", json.RawMessage(`{"name":"Ada"}`))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := EncodeRequest(id, MethodToolsCall, params, client); err != nil {
			b.Fatal(err)
		}
	}
}
