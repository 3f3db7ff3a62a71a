package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Version is the MCP revision ABI 1 speaks.
const Version = "2026-07-28"

// The _meta keys every request carries (host contract §3).
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// Method names the host sends.
const (
	MethodDiscover  = "server/discover"
	MethodToolsList = "tools/list"
	MethodToolsCall = "tools/call"
)

// ClientInfo is the host's implementation info sent in every request.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type request struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      ID             `json:"id"`
	Method  string         `json:"method"`
	Params  map[string]any `json:"params"`
}

// EncodeRequest renders one request line: compact JSON followed by "\n".
// params (nil means {}) is not modified; its "_meta" member, if it is a
// map[string]any, is copied and the three host keys are set in it, replacing
// any the caller put there. Member order is sorted (encoding/json), and
// "<", ">" and "&" are not escaped, so text reaches the module as written.
func EncodeRequest(id ID, method string, params map[string]any, client ClientInfo) ([]byte, error) {
	if id.IsZero() || id.IsNull() {
		return nil, errors.New("protocol: a request needs a string or number id")
	}
	if method == "" {
		return nil, errors.New("protocol: a request needs a method")
	}
	var meta map[string]any
	switch m := params["_meta"].(type) {
	case nil:
	case map[string]any:
		meta = m
	default:
		return nil, fmt.Errorf("protocol: params._meta is a %T; it must be a map[string]any", m)
	}
	if line, ok := appendRequest(id, method, params, meta, client); ok {
		return line, nil
	}
	return encodeRequestJSON(id, method, params, meta, client)
}

// encodeRequestJSON is EncodeRequest through encoding/json: the definition
// of the output, used for values appendRequest does not know.
func encodeRequestJSON(id ID, method string, params, meta map[string]any, client ClientInfo) ([]byte, error) {
	p := make(map[string]any, len(params)+1)
	for k, v := range params {
		p[k] = v
	}
	m := make(map[string]any, len(meta)+3)
	for k, v := range meta {
		m[k] = v
	}
	m[MetaProtocolVersion] = Version
	m[MetaClientInfo] = client
	m[MetaClientCapabilities] = struct{}{}
	p["_meta"] = m

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(request{JSONRPC: "2.0", ID: id, Method: method, Params: p}); err != nil {
		return nil, fmt.Errorf("protocol: encoding %s request: %w", method, err)
	}
	return buf.Bytes(), nil // Encode ends the value with exactly one "\n"
}

// ToolsListParams returns the params of a tools/list request: empty for the
// first page, {"cursor": c} after a page whose nextCursor was c (an empty
// string is a cursor too).
func ToolsListParams(cursor *string) map[string]any {
	if cursor == nil {
		return map[string]any{}
	}
	return map[string]any{"cursor": *cursor}
}

// ToolsCallParams returns the params of a tools/call request. arguments must
// be a JSON object; nil means {}.
func ToolsCallParams(name string, arguments json.RawMessage) (map[string]any, error) {
	if len(arguments) == 0 {
		arguments = json.RawMessage("{}")
	}
	if firstByte(arguments) != '{' || !validJSON(arguments) {
		return nil, errors.New("protocol: tool arguments must be a JSON object")
	}
	return map[string]any{"name": name, "arguments": arguments}, nil
}
