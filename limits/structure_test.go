package limits

import (
	"strings"
	"testing"
)

// TestDefaultStructureCompileCostBounds pins the defaults of the bounds the
// compile-cost sweep found (internal/modcheck's TestCompileCostAtLimits
// measures a module at each; docs/security.md has the table).
func TestDefaultStructureCompileCostBounds(t *testing.T) {
	s := DefaultStructure()
	checks := []struct {
		name      string
		got, want int64
	}{
		{"globals", int64(s.Globals), 10_000},
		{"global cost", s.GlobalCost, 4_000_000},
		{"locals", s.Locals, 1_000_000},
		{"local cost", s.LocalCost, 1_000_000_000},
		{"br_table cost", s.BrTableCost, 5_000_000_000},
		{"branch values", s.BranchValues, 1_000_000},
		{"types", int64(s.Types), 1_000},
		{"type arity", int64(s.TypeArity), 1_000},
		{"type values", int64(s.TypeValues), 10_000},
		{"table elements", s.TableElements, 1_000_000},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	// The default br_table cost admits one br_table of the most labels
	// one may have, and not two.
	if n := int64(s.BrTableTargets); n*n > s.BrTableCost || 2*n*n <= s.BrTableCost {
		t.Errorf("br_table cost %d does not admit exactly one br_table of %d labels", s.BrTableCost, n)
	}
}

func TestValidateRefusesZeroCompileCostBounds(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Structure)
		want   string
	}{
		{"globals", func(s *Structure) { s.Globals = 0 }, "globals limit"},
		{"global cost", func(s *Structure) { s.GlobalCost = -1 }, "global cost limit"},
		{"locals", func(s *Structure) { s.Locals = 0 }, "locals limit"},
		{"local cost", func(s *Structure) { s.LocalCost = 0 }, "local cost limit"},
		{"br_table cost", func(s *Structure) { s.BrTableCost = 0 }, "br_table cost limit"},
		{"branch values", func(s *Structure) { s.BranchValues = 0 }, "branch values limit"},
		{"types", func(s *Structure) { s.Types = 0 }, "types limit"},
		{"type arity", func(s *Structure) { s.TypeArity = 0 }, "type arity limit"},
		{"type values", func(s *Structure) { s.TypeValues = 0 }, "type values limit"},
		{"table elements", func(s *Structure) { s.TableElements = 0 }, "table elements limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Default()
			tt.mutate(&l.Structure)
			err := l.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
}
