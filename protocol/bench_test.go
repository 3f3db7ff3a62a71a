package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

// greetLine is what the cgreet module answers to a tools/call: the response
// every call of BenchmarkCGreetCall in package runtime classifies.
const greetLine = `{"jsonrpc":"2.0","id":4503599627370497,"result":{"content":[{"type":"text","text":"Hello, Ada!"}],"isError":false}}`

func BenchmarkClassifyCallResponse(b *testing.B) {
	for _, line := range []string{greetLine, strings.Replace(greetLine, "4503599627370497", `"subako-1f3a9c0d5e7b2468"`, 1)} {
		b.Run(line[22:26], func(b *testing.B) {
			l := []byte(line)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Classify(l); err != nil {
					b.Fatal(err)
				}
			}
		})
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
	args := json.RawMessage(`{"name":"Ada"}`)
	b.ReportAllocs()
	for b.Loop() {
		params, err := ToolsCallParams("greet", args)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := EncodeRequest(id, MethodToolsCall, params, client); err != nil {
			b.Fatal(err)
		}
	}
}
