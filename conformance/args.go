package conformance

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/subako/subako-runner/internal/text"
	"github.com/subako/subako-runner/protocol"
)

// The probes need arguments a tool's inputSchema refuses (the module must
// answer them with isError) and arguments it accepts (to see a real result
// and check structuredContent). Both are generated from the schema and then
// confirmed with the tool's compiled schema, so a generator that guesses
// wrong yields a skip, never a false verdict.

// schemaObject is the part of a JSON Schema the generators read.
type schemaObject struct {
	Type                 any                        `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	Enum                 []json.RawMessage          `json:"enum"`
	Const                json.RawMessage            `json:"const"`
	Default              json.RawMessage            `json:"default"`
	Examples             []json.RawMessage          `json:"examples"`
	Minimum              *float64                   `json:"minimum"`
	MinLength            int                        `json:"minLength"`
	MinItems             int                        `json:"minItems"`
}

func parseSchema(raw json.RawMessage) schemaObject {
	var s schemaObject
	_ = json.Unmarshal(raw, &s)
	return s
}

// firstType is the schema's type, or its first when it lists several.
func (s schemaObject) firstType() string {
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		for _, v := range t {
			if str, ok := v.(string); ok && str != "null" {
				return str
			}
		}
	}
	return ""
}

// validArguments builds an object that should satisfy the schema: every
// required property gets a value of its type (its const, first enum value,
// first example or default when it has one).
func validArguments(tool *protocol.CompiledTool) (json.RawMessage, error) {
	v := validValue(parseSchema(tool.Tool.InputSchema), 0)
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := tool.ValidateInput(b); err != nil {
		return nil, fmt.Errorf("the generated arguments %s do not satisfy the inputSchema (%v)", b, text.FirstLine(err.Error()))
	}
	return b, nil
}

func validValue(s schemaObject, depth int) any {
	for _, raw := range [][]byte{s.Const, first(s.Enum), first(s.Examples), s.Default} {
		if len(raw) > 0 {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				return v
			}
		}
	}
	switch s.firstType() {
	case "string":
		str := "example"
		for len(str) < s.MinLength {
			str += "-example"
		}
		return str
	case "integer", "number":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 1
	case "boolean":
		return true
	case "null":
		return nil
	case "array":
		arr := []any{}
		for i := 0; i < s.MinItems; i++ {
			arr = append(arr, "example")
		}
		return arr
	}
	obj := map[string]any{}
	if depth > 8 {
		return obj
	}
	for _, name := range s.Required {
		obj[name] = validValue(parseSchema(s.Properties[name]), depth+1)
	}
	return obj
}

func first(l []json.RawMessage) json.RawMessage {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}

// invalidArguments builds an object the schema refuses for a reason other
// than a missing property (the empty-arguments probe covers that): a
// required property of the wrong type, then any property of the wrong type,
// then a property the schema does not allow. It returns nil and a reason
// when the schema accepts every candidate.
func invalidArguments(tool *protocol.CompiledTool) (json.RawMessage, string, error) {
	s := parseSchema(tool.Tool.InputSchema)
	valid, _ := validValue(s, 0).(map[string]any)
	type candidate struct {
		args map[string]any
		why  string
	}
	var cands []candidate
	wrong := func(name string) {
		p := parseSchema(s.Properties[name])
		args := map[string]any{}
		for k, v := range valid {
			args[k] = v
		}
		args[name] = wrongValue(p.firstType())
		cands = append(cands, candidate{args, fmt.Sprintf("property %q of the wrong type", name)})
	}
	for _, name := range s.Required {
		if _, ok := s.Properties[name]; ok {
			wrong(name)
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		wrong(name)
	}
	extra := map[string]any{}
	for k, v := range valid {
		extra[k] = v
	}
	extra["subako_check_unexpected"] = true
	cands = append(cands, candidate{extra, "a property the schema does not allow"})
	for _, c := range cands {
		b, err := json.Marshal(c.args)
		if err != nil {
			return nil, "", err
		}
		if tool.ValidateInput(b) != nil {
			return b, c.why, nil
		}
	}
	return nil, "", nil
}

// wrongValue is a value that is not of the JSON type t.
func wrongValue(t string) any {
	switch t {
	case "string":
		return 12345
	case "":
		return nil
	}
	return "subako-check: not a " + t
}
