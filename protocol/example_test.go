package protocol_test

import (
	"fmt"
	"os"

	"github.com/subako/subako-runner/protocol"
)

func Example() {
	id := protocol.StringID("discover-1")
	line, err := protocol.EncodeRequest(id, protocol.MethodDiscover, nil, protocol.ClientInfo{Name: "subako", Version: "0.2.3"})
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(line)

	// The module answers on its stdout; the runtime classifies each line.
	reply := `{"jsonrpc":"2.0","id":"discover-1","result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}}`
	msg, err := protocol.Classify([]byte(reply))
	if err != nil {
		panic(err)
	}
	fmt.Println(msg.Kind, msg.ID, msg.ID.Key() == id.Key())
	if err := protocol.CheckComplete(msg.Result); err != nil {
		panic(err)
	}
	d, err := protocol.ParseDiscover(msg.Result)
	fmt.Println(d.SupportedVersions, err, d.TTLMs != nil)

	_, err = protocol.Classify([]byte("listening on stdio"))
	fmt.Println(err)
	// Output:
	// {"jsonrpc":"2.0","id":"discover-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"subako","version":"0.2.3"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}
	// response "discover-1" true
	// [2026-07-28] <nil> false
	// not_jsonrpc: a stdout line is not JSON (invalid character 'l' looking for beginning of value at byte 1): "listening on stdio"; stdout is only for JSON-RPC messages (write logs to stderr)
}
