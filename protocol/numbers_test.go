package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

func outputTool(t *testing.T, schema string) *CompiledTool {
	t.Helper()
	set, errs := ValidateTools([]Tool{ParseTool(json.RawMessage(`{"name":"t","inputSchema":{"type":"object"},"outputSchema":` + schema + `}`))}, 0)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c, _ := set.Lookup("t")
	return c
}

// TestSchemaNumbersAreBounded: the schema validator converts numbers
// through big.Rat (a million digits: 2.8 s of host CPU; 1e999999: 64 ms
// for 9 bytes), so numbers over the bounds are refused before it sees
// them, in linear time; every number a real encoder writes passes.
func TestSchemaNumbersAreBounded(t *testing.T) {
	c := outputTool(t, `{"type":"object","properties":{"x":{"type":"integer"},"s":{"type":"string"}}}`)
	huge := []byte(`{"x":1` + strings.Repeat("7", 8<<20) + `}`)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := c.ValidateOutput(huge)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "longer than the 1000") {
		t.Fatalf("8M-digit number: %v, want a refusal naming the bound", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*uint64(len(huge)) {
		t.Fatalf("refusing a %d-byte document allocated %d bytes", len(huge), alloc)
	}
	many := []byte(`{"x":[` + strings.Repeat("1e999999,", 100_000) + `1]}`)
	if err := c.ValidateOutput(many); err == nil || !strings.Contains(err.Error(), "exponent beyond ±400") {
		t.Fatalf("1e999999: %v, want a refusal naming the bound", err)
	}
	for _, ok := range []string{
		`{"x":12345678901234567890123}`,
		`{"x":1e300,"y":1.7976931348623157e308,"z":5e-324,"w":-0.0e-0}`,
		`{"s":"` + strings.Repeat("9", 100_000) + `"}`, // digits in a string are text
		`{"s":"a \"1e9999999\" b","x":1}`,
		`{"` + strings.Repeat("1", 2000) + `":1}`, // and in a key
	} {
		if err := c.ValidateOutput(json.RawMessage(ok)); err != nil {
			t.Errorf("%.60s: %v", ok, err)
		}
	}
	// A schema's own numbers are bounded the same way.
	_, errs := ValidateTools([]Tool{ParseTool(json.RawMessage(`{"name":"t","inputSchema":{"type":"object","maxProperties":1e500}}`))}, 0)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "exponent beyond") {
		t.Fatalf("schema with 1e500: %v", errs)
	}
}

// FuzzCheckNumbers: checkNumbers never panics, and on valid JSON it agrees
// with the number tokens a JSON decoder finds.
func FuzzCheckNumbers(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1e400,2]`, `"\"1e999"`, `{"1e999":-0.5E+401}`, `[` + strings.Repeat("1", 1001) + `]`, `1e`, `-`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := checkNumbers(raw)
		if !json.Valid(raw) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		over := false
		for {
			tok, terr := dec.Token()
			if errors.Is(terr, io.EOF) || terr != nil {
				break
			}
			if n, ok := tok.(json.Number); ok {
				e, eok := exponent([]byte(n))
				if len(n) > maxNumberText || !eok || e > maxNumberExponent || e < -maxNumberExponent {
					over = true
				}
			}
		}
		if over != (err != nil) {
			t.Fatalf("%q: checkNumbers %v, decoder finds a number over the bounds: %v", raw, err, over)
		}
	})
}
