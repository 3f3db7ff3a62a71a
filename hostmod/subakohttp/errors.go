package subakohttp

import (
	"bytes"
	"encoding/json"
)

// Kind is the stable error kind of a subako_http response (docs/abi.md §8).
type Kind string

// The error kinds of docs/abi.md §8.
const (
	KindInvalidRequest        Kind = "invalid_request"
	KindHostNotAllowed        Kind = "host_not_allowed"
	KindForbiddenDestination  Kind = "forbidden_destination"
	KindCredentialHeader      Kind = "credential_header"
	KindCredentialUnavailable Kind = "credential_unavailable"
	KindTooManyRedirects      Kind = "too_many_redirects"
	KindTimeout               Kind = "timeout"
	KindTooLarge              Kind = "too_large"
	KindNotText               Kind = "not_text"
	KindWriteBudget           Kind = "write_budget"
	KindBadPath               Kind = "bad_path"
	KindConnection            Kind = "connection"
	KindABI                   Kind = "abi"
)

// Error is a failed request: the kind the guest sees and a sentence telling
// the package author what to change. Messages never carry credential values
// or bodies.
type Error struct {
	Kind    Kind
	Message string
}

func (e *Error) Error() string { return string(e.Kind) + ": " + e.Message }

func errorf(kind Kind, msg string) *Error { return &Error{Kind: kind, Message: msg} }

// marshalCompact encodes v as compact JSON without HTML escaping, so text
// bodies reach the guest byte for byte.
func marshalCompact(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only reachable through a programming error: every value encoded
		// here is built from strings, numbers and maps.
		return []byte(`{"error":{"kind":"connection","message":"the host could not encode the response"}}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Document is the response document of a request that failed with e, as
// request answers it: {"error":{"kind":…,"message":…}}. A host that
// performs requests elsewhere (the runtime's worker processes) answers its
// own failures to reach that place with it.
func (e *Error) Document() []byte { return errorResponse(e) }

func errorResponse(e *Error) []byte {
	return marshalCompact(map[string]any{"error": map[string]string{"kind": string(e.Kind), "message": e.Message}})
}

// okResponse is the "ok" document; Body is inlineBody or fileBody.
type okResponse struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    any               `json:"body"`
}

type inlineBody struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type fileBody struct {
	Type  string `json:"type"`
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}
