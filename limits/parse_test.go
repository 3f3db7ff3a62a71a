package limits

import "testing"

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"256MiB", "1.5g", "", "9999999999999999999", "1e9", ".", "0.000001kb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d: negative size accepted", s, n)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30s", "0.5", "-1", "1e400", "NaN", "1h1m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v: negative duration accepted", s, d)
		}
	})
}
