package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxToolNameLen is the longest tool name ABI 1 accepts.
const MaxToolNameLen = 128

// ConformanceToolNameLen is the longest name the MCP conformance suite
// accepts; longer names get a warning.
const ConformanceToolNameLen = 64

// maxReported bounds the problems ValidateTools lists, so a tool list of a
// hundred thousand bad entries yields a readable report.
const maxReported = 100

// Warning is a tool-list finding that does not reject the package.
type Warning struct {
	Tool    string
	Kind    string // one of the Warn constants
	Message string
}

// Kinds of Warning.
const (
	// WarnNameLength: a name longer than ConformanceToolNameLen.
	WarnNameLength = "name_length"
	// WarnDescription: a tool without a description.
	WarnDescription = "description"
	// WarnSchemaPattern: a schema pattern in ECMAScript-only regular
	// expression syntax (lookaround, backreferences), which the host
	// accepts but cannot enforce.
	WarnSchemaPattern = "schema_pattern"
)

// CompiledTool is a validated tool with its compiled schemas.
type CompiledTool struct {
	Tool   Tool
	input  *jsonschema.Schema
	output *jsonschema.Schema // nil when the tool has no outputSchema
}

// HasOutputSchema reports whether the tool declared an outputSchema.
func (c *CompiledTool) HasOutputSchema() bool { return c.output != nil }

// ValidateInput checks tool arguments against the inputSchema. The host does
// not do this for calls (the module must); check uses it for its probes.
func (c *CompiledTool) ValidateInput(arguments json.RawMessage) error {
	return validateInstance(c.input, arguments, "arguments")
}

// ValidateOutput checks a result's structuredContent against the
// outputSchema; without an outputSchema anything passes.
func (c *CompiledTool) ValidateOutput(structuredContent json.RawMessage) error {
	if c.output == nil {
		return nil
	}
	return validateInstance(c.output, structuredContent, "structuredContent")
}

func validateInstance(s *jsonschema.Schema, raw json.RawMessage, what string) error {
	if err := checkNumbers(raw); err != nil {
		return fmt.Errorf("%s cannot be checked: %w", what, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s is not JSON: %w", what, err)
	}
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s does not match the schema: %s", what, leafMessages(ve))
		}
		return fmt.Errorf("%s does not match the schema: %w", what, err)
	}
	return nil
}

// ToolSet is a validated tool list: what the package provides until its next
// version.
type ToolSet struct {
	tools    []Tool
	byName   map[string]*CompiledTool
	warnings []Warning
}

// Lookup finds a tool by its exact (case-sensitive) name.
func (s *ToolSet) Lookup(name string) (*CompiledTool, bool) {
	c, ok := s.byName[name]
	return c, ok
}

// Tools returns the tools in the order the module listed them.
func (s *ToolSet) Tools() []Tool { return append([]Tool(nil), s.tools...) }

// Len returns the number of tools.
func (s *ToolSet) Len() int { return len(s.tools) }

// Warnings returns the findings that did not reject the list: names longer
// than ConformanceToolNameLen, missing descriptions, and schema patterns the
// host cannot enforce (ECMAScript-only regex syntax, accepted unchecked).
func (s *ToolSet) Warnings() []Warning { return append([]Warning(nil), s.warnings...) }

// ValidateTools applies the tool-list rules of host contract §4 to the tools
// of all pages, in order, and reports every problem (up to 100, then one
// summary). On any problem the ToolSet is nil. maxTools ≤ 0 means no limit.
//
// Rules: at least one tool (no_tools); at most maxTools (invalid_tool); each
// tool a JSON object with a name of 1–128 characters of [A-Za-z0-9_.-]
// (invalid_tool), unique (duplicate_tool); title and description strings
// when present; inputSchema a JSON object with "type":"object" that
// compiles; outputSchema, when present, compiles. Schemas compile with
// draft 2020-12 unless $schema names another draft, and no $ref is ever
// loaded from a URL or a file. null for an optional member (title,
// description, outputSchema, annotations, icons, _meta) counts as absent:
// some serialisers write it and it is harmless.
func ValidateTools(tools []Tool, maxTools int) (*ToolSet, []*Error) {
	var errs []*Error
	report := func(e *Error) {
		if len(errs) < maxReported {
			errs = append(errs, e)
		} else if len(errs) == maxReported {
			errs = append(errs, errorf(CodeInvalidTool, "more problems were found and not listed; fix the ones above first"))
		}
	}
	if len(tools) == 0 {
		return nil, []*Error{errorf(CodeNoTools, "tools/list returned no tools; a package must provide at least one tool")}
	}
	if maxTools > 0 && len(tools) > maxTools {
		report(errorf(CodeInvalidTool, "tools/list returned %d tools; at most %d are allowed", len(tools), maxTools))
	}
	set := &ToolSet{tools: append([]Tool(nil), tools...), byName: make(map[string]*CompiledTool, len(tools))}
	firstAt := make(map[string]int, len(tools))
	for i, t := range tools {
		label := toolLabel(i, t)
		bad := func(format string, args ...any) {
			e := errorf(CodeInvalidTool, "%s: %s", label, fmt.Sprintf(format, args...))
			e.Tool = t.Name
			report(e)
		}
		if t.members == nil {
			if len(t.Raw) > 0 || t.Name == "" {
				bad("it is %s; each tool must be an object with name and inputSchema", describeJSON(t.Raw))
				continue
			}
			t = newToolFromFields(t) // built in Go, not parsed
		}
		nameOK := checkName(t, bad)
		if nameOK {
			if j, dup := firstAt[t.Name]; dup {
				e := errorf(CodeDuplicateTool, "%s: the name %q is already used by tool #%d; tool names must be unique across all pages", label, t.Name, j+1)
				e.Tool = t.Name
				report(e)
			} else {
				firstAt[t.Name] = i
			}
			if len(t.Name) > ConformanceToolNameLen {
				set.warnings = append(set.warnings, Warning{t.Name, WarnNameLength, fmt.Sprintf("the name is %d characters; the MCP conformance suite accepts at most %d", len(t.Name), ConformanceToolNameLen)})
			}
		}
		for _, m := range []string{"title", "description"} {
			if v, ok := t.members.get(m); ok && !isNull(v) {
				if _, isStr := jsonString(v); !isStr {
					bad("%s is %s; it must be a string", m, describeJSON(v))
				}
			}
		}
		if v, ok := t.members.get("description"); !ok || isNull(v) {
			set.warnings = append(set.warnings, Warning{t.Name, WarnDescription, "the tool has no description; the model chooses tools by their descriptions"})
		}
		if maxTools > 0 && i >= maxTools {
			continue // over the limit: already rejected, do not spend time compiling
		}
		ct := &CompiledTool{Tool: t}
		var warn []string
		if in, ok := t.members.get("inputSchema"); !ok || isNull(in) {
			bad("it has no inputSchema; give one such as {\"type\":\"object\"}")
		} else if firstByte(in) != '{' {
			bad("inputSchema is %s; it must be a JSON Schema object with \"type\":\"object\"", describeJSON(in))
		} else {
			if ty, ok := jsonMember(in, "type"); !ok {
				bad("inputSchema has no \"type\"; it must have \"type\":\"object\"")
			} else if s, _ := jsonString(ty); s != "object" {
				bad("inputSchema has \"type\":%s; it must be \"object\" (tool arguments are an object)", quoteRaw(ty))
			}
			s, w, err := compileSchema(in)
			warn = append(warn, w...)
			if err != nil {
				bad("inputSchema does not compile: %v", err)
			}
			ct.input = s
		}
		if out, ok := t.members.get("outputSchema"); ok && !isNull(out) {
			s, w, err := compileSchema(out)
			warn = append(warn, w...)
			if err != nil {
				bad("outputSchema does not compile: %v", err)
			}
			ct.output = s
		}
		for _, w := range warn {
			set.warnings = append(set.warnings, Warning{t.Name, WarnSchemaPattern, w})
		}
		if nameOK && firstAt[t.Name] == i {
			set.byName[t.Name] = ct
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return set, nil
}

func toolLabel(i int, t Tool) string {
	if t.Name != "" {
		return fmt.Sprintf("tool #%d (%s)", i+1, quoteShort(t.Name, 64))
	}
	return fmt.Sprintf("tool #%d", i+1)
}

func checkName(t Tool, bad func(string, ...any)) bool {
	raw, ok := t.members.get("name")
	if !ok {
		bad("it has no name")
		return false
	}
	name, isStr := jsonString(raw)
	switch {
	case !isStr:
		bad("name is %s; it must be a string", describeJSON(raw))
	case name == "":
		bad("the name is empty; use 1–%d characters of A–Z, a–z, 0–9, '_', '.' and '-'", MaxToolNameLen)
	case len(name) > MaxToolNameLen:
		bad("the name is %d characters long; at most %d are allowed", len(name), MaxToolNameLen)
	default:
		for i := 0; i < len(name); i++ {
			if !nameChar(name[i]) {
				r := []rune(name[i:])[0]
				bad("the name contains %q; use only A–Z, a–z, 0–9, '_', '.' and '-'", r)
				return false
			}
		}
		return true
	}
	return false
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// newToolFromFields gives a Go-built Tool the member map validation reads.
func newToolFromFields(t Tool) Tool {
	b, err := t.MarshalJSON()
	if err != nil {
		return t
	}
	return newTool(b)
}

func jsonMember(obj json.RawMessage, name string) (json.RawMessage, bool) {
	var buf [8]member
	m, err := objectMembers(obj, buf[:0])
	if err != nil {
		return nil, false
	}
	return m.get(name)
}

// schemaBase is the made-up URL a tool schema is compiled at. It only gives
// relative $refs something to resolve against; nothing is ever fetched.
const schemaBase = "mem://tool/schema.json"

type remoteRefError struct{ url string }

func (e remoteRefError) Error() string { return "remote $ref is not loaded" }

// refuseLoader is the compiler's only loader: the host never fetches a schema
// from a URL or reads one from a file (the metaschemas of the known drafts
// are built into the library and still resolve).
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) { return nil, remoteRefError{url} }

// compileSchema compiles one tool schema with a fresh compiler, so tools
// cannot see each other's $id resources.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, []string, error) {
	if err := checkNumbers(raw); err != nil {
		return nil, nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	c.UseRegexpEngine(func(p string) (jsonschema.Regexp, error) {
		re, err := regexp.Compile(translateECMA(p))
		if err == nil {
			return re, nil
		}
		if ecmaOnly(p) {
			warnings = append(warnings, fmt.Sprintf("the pattern %s uses ECMAScript regex syntax (lookaround or backreference) that the host cannot check; it is accepted but not enforced", quoteShort(p, 80)))
			return unchecked(p), nil
		}
		return nil, err
	})
	if err := c.AddResource(schemaBase, doc); err != nil {
		return nil, nil, err
	}
	s, err := c.Compile(schemaBase)
	if err != nil {
		return nil, warnings, readableSchemaError(err, doc)
	}
	return s, warnings, nil
}

func readableSchemaError(err error, doc any) error {
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		var rr remoteRefError
		if errors.As(le.Err, &rr) {
			if m, ok := doc.(map[string]any); ok {
				if s, _ := m["$schema"].(string); s != "" && strings.TrimSuffix(s, "#") == strings.TrimSuffix(le.URL, "#") {
					return fmt.Errorf("$schema %q is not a supported draft; use draft-04, -06, -07, 2019-09 or 2020-12 (https://json-schema.org/draft/2020-12/schema)", s)
				}
			}
			ref := strings.TrimPrefix(le.URL, "mem://tool/")
			return fmt.Errorf("it refers to %q, which is outside the schema; the host never loads a remote $ref, so put that schema under $defs and refer to it as \"#/$defs/…\"", ref)
		}
	}
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		return fmt.Errorf("it is not valid JSON Schema (%s): %s", draftName(doc), leafMessages(ve))
	}
	msg := strings.ReplaceAll(err.Error(), schemaBase, "")
	return errors.New(strings.ReplaceAll(msg, "mem://tool/", ""))
}

// translateECMA rewrites the ECMAScript escapes \uXXXX and \u{X…} into Go's
// \x{…}, leaving everything else (including escaped backslashes) alone.
func translateECMA(p string) string {
	if !strings.Contains(p, `\u`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' || i+1 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		if p[i+1] == 'u' {
			if i+6 <= len(p) && isHex(p[i+2:i+6]) {
				b.WriteString(`\x{` + p[i+2:i+6] + `}`)
				i += 5
				continue
			}
			if i+2 < len(p) && p[i+2] == '{' {
				if end := strings.IndexByte(p[i+3:], '}'); end > 0 && isHex(p[i+3:i+3+end]) {
					b.WriteString(`\x{` + p[i+3:i+3+end] + `}`)
					i += 3 + end
					continue
				}
			}
		}
		b.WriteByte(p[i])
		b.WriteByte(p[i+1])
		i++
	}
	return b.String()
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// ecmaOnly reports syntax valid in ECMAScript but not in RE2 (lookaround,
// backreferences); patterns with it are kept but not enforced.
func ecmaOnly(p string) bool {
	for _, s := range []string{"(?=", "(?!", "(?<=", "(?<!", `\k<`} {
		if strings.Contains(p, s) {
			return true
		}
	}
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			if p[i+1] >= '1' && p[i+1] <= '9' {
				return true
			}
			i++
		}
	}
	return false
}

type unchecked string

func (u unchecked) String() string          { return string(u) }
func (u unchecked) MatchString(string) bool { return true }

// leafMessages joins the innermost causes of a validation error on one line
// ("at '/properties/a/minLength': minimum: got -1, want 0"), dropping the
// "allOf failed" levels above them, which only say where the metaschema
// looked.
func leafMessages(ve *jsonschema.ValidationError) string {
	const most = 5
	var leaves []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e.Error())
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) > most {
		leaves = append(leaves[:most], fmt.Sprintf("and %d more", len(leaves)-most))
	}
	return strings.Join(leaves, "; ")
}

func draftName(doc any) string {
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok {
			return "$schema " + s
		}
	}
	return "draft 2020-12"
}
