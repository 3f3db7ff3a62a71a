package protocol

import (
	"encoding/json"
	"slices"
)

// CheckComplete applies the resultType rule to any response's result: a
// resultType that is present and not the string "complete" (null included)
// is *Error{CodeResultNotComplete}; an absent one counts as complete. A
// result that is not a JSON object passes here: the result parsers reject it
// with their own code.
func CheckComplete(result json.RawMessage) error {
	if firstByte(result) != '{' {
		return nil
	}
	var buf [8]member
	members, err := objectMembers(result, buf[:0])
	if err != nil {
		return nil
	}
	rt, ok := members.get("resultType")
	if !ok || jsonStringIs(rt, "complete") {
		return nil
	}
	return errorf(CodeResultNotComplete, "the result has \"resultType\":%s; a stateless server must answer with a complete result (omit resultType or set it to \"complete\")", quoteRaw(rt))
}

// DiscoverResult is what server/discover returned.
type DiscoverResult struct {
	SupportedVersions []string
	// Capabilities is the capabilities object as sent.
	Capabilities json.RawMessage
	// ServerInfo is the serverInfo member as sent, or else _meta's
	// io.modelcontextprotocol/serverInfo, where MCP 2026-07-28 puts it;
	// nil when neither is there.
	ServerInfo json.RawMessage
	// Instructions is the instructions member as sent (nil when absent).
	Instructions json.RawMessage
	// ResultType, TTLMs and CacheScope are members the official schema
	// requires but ABI 1 accepts without, as sent (nil when absent): check
	// warns about a missing one, mcp passes ttlMs and cacheScope on.
	ResultType, TTLMs, CacheScope json.RawMessage
	// Raw is the whole result as sent.
	Raw json.RawMessage
}

// ParseDiscover reads a server/discover result. It must be an object listing
// Version in supportedVersions (an array of strings) and having an object
// capabilities.tools; otherwise *Error{CodeDiscoverUnsupported}.
func ParseDiscover(result json.RawMessage) (DiscoverResult, error) {
	var buf [8]member
	members, err := objectMembers(result, buf[:0])
	if err != nil {
		return DiscoverResult{}, errorf(CodeDiscoverUnsupported, "the server/discover result is %s, not an object with supportedVersions and capabilities", describeJSON(result))
	}
	d := DiscoverResult{Raw: result, ServerInfo: members.value("serverInfo"), Instructions: members.value("instructions"),
		ResultType: members.value("resultType"), TTLMs: members.value("ttlMs"), CacheScope: members.value("cacheScope")}
	if d.ServerInfo == nil {
		if meta, ok := members.get("_meta"); ok {
			var metaBuf [4]member
			if mm, err := objectMembers(meta, metaBuf[:0]); err == nil {
				d.ServerInfo = mm.value("io.modelcontextprotocol/serverInfo")
			}
		}
	}

	sv, ok := members.get("supportedVersions")
	if !ok {
		return d, errorf(CodeDiscoverUnsupported, "the server/discover result has no supportedVersions; list %q in it", Version)
	}
	if firstByte(sv) != '[' || json.Unmarshal(sv, &d.SupportedVersions) != nil {
		return d, errorf(CodeDiscoverUnsupported, "the server/discover result has supportedVersions %s; it must be an array of strings that includes %q", quoteRaw(sv), Version)
	}
	if !slices.Contains(d.SupportedVersions, Version) {
		return d, errorf(CodeDiscoverUnsupported, "the module supports MCP %s but not %s, the revision ABI 1 speaks; add %q to supportedVersions", quoteRaw(sv), Version, Version)
	}
	caps, ok := members.get("capabilities")
	if !ok {
		return d, errorf(CodeDiscoverUnsupported, "the server/discover result has no capabilities; declare \"capabilities\":{\"tools\":{}}")
	}
	d.Capabilities = caps
	var capsBuf [4]member
	cm, err := objectMembers(caps, capsBuf[:0])
	if err != nil {
		return d, errorf(CodeDiscoverUnsupported, "the server/discover result has capabilities %s; it must be an object such as {\"tools\":{}}", quoteRaw(caps))
	}
	tools, ok := cm.get("tools")
	if !ok {
		return d, errorf(CodeDiscoverUnsupported, "the module does not declare the tools capability; add \"tools\":{} to capabilities")
	}
	if firstByte(tools) != '{' {
		return d, errorf(CodeDiscoverUnsupported, "capabilities.tools is %s; it must be an object such as {}", quoteRaw(tools))
	}
	return d, nil
}

// objectMembers appends a JSON object's members to buf; anything else is an
// error. The values alias raw.
func objectMembers(raw json.RawMessage, buf memberList) (memberList, error) {
	if firstByte(raw) != '{' {
		return nil, notObjectError{}
	}
	if ms, ok := scanObject(raw, buf); ok {
		return ms, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if len(buf) == 0 {
		return membersOf(m), nil
	}
	return append(buf, membersOf(m)...), nil
}

type notObjectError struct{}

func (notObjectError) Error() string { return "not a JSON object" }

// describeJSON names the type of a JSON value for messages.
func describeJSON(raw json.RawMessage) string {
	switch c := firstByte(raw); {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || isDigit(c):
		return "a number"
	case c == 0:
		return "missing"
	}
	return "not JSON"
}
