package limits

import "testing"

// TestWriteBudgetBoundaries pins each edge of Reserve and Refund: one byte
// is charged, the last byte fits and the next does not (on a fresh account
// and on one with bytes used), nothing refused is charged, empty and
// negative amounts cost and refund nothing.
func TestWriteBudgetBoundaries(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
		steps []int64 // reservations, in order
		oks   []bool
		used  int64
	}{
		{"one byte is charged", 3, []int64{1, 1, 1, 1}, []bool{true, true, true, false}, 3},
		{"the whole limit at once", 1 << 30, []int64{1 << 30}, []bool{true}, 1 << 30},
		{"one byte past the limit at once", 1 << 30, []int64{1<<30 + 1}, []bool{false}, 0},
		{"the rest exactly", 10, []int64{4, 6}, []bool{true, true}, 10},
		{"one byte past the rest", 10, []int64{4, 7, 6}, []bool{true, false, true}, 10},
		{"zero and negative are free", 1, []int64{0, -5, 1, 0}, []bool{true, true, true, true}, 1},
	}
	for _, tt := range tests {
		b := NewCallBudget(Limits{WriteBudget: tt.limit})
		for i, n := range tt.steps {
			if got := b.Reserve(n); got != tt.oks[i] {
				t.Errorf("%s: Reserve(%d) (step %d) = %v", tt.name, n, i, got)
			}
		}
		if b.Used() != tt.used || b.Remaining() != tt.limit-tt.used {
			t.Errorf("%s: used %d, remaining %d; want %d, %d", tt.name, b.Used(), b.Remaining(), tt.used, tt.limit-tt.used)
		}
	}
	b := NewCallBudget(Limits{WriteBudget: 10})
	b.Reserve(5)
	for _, n := range []int64{0, -3} {
		b.Refund(n)
		if b.Used() != 5 {
			t.Fatalf("Refund(%d) changed the account to %d", n, b.Used())
		}
	}
	b.Refund(1)
	if b.Used() != 4 {
		t.Fatalf("Refund(1): used %d, want 4", b.Used())
	}
}
