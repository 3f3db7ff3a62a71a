package limits

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// sizeUnits maps a unit suffix (lowercased) to its multiplier. Binary and
// decimal units are both accepted because people write both; "MB" means
// 10^6 as it does for curl and Kubernetes quantities.
var sizeUnits = map[string]int64{
	"":    1,
	"b":   1,
	"k":   KiB,
	"kb":  1000,
	"kib": KiB,
	"m":   MiB,
	"mb":  1000 * 1000,
	"mib": MiB,
	"g":   GiB,
	"gb":  1000 * 1000 * 1000,
	"gib": GiB,
	"t":   1024 * GiB,
	"tb":  1000 * 1000 * 1000 * 1000,
	"tib": 1024 * GiB,
}

// ParseSize parses a human size such as "256MiB", "64 KiB", "1g" or "4096"
// into bytes. Fractions are accepted ("1.5GiB") and rounded down to a byte.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty size")
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number followed by an optional unit such as MiB", s)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB or KB, MB, GB, TB)", s, t[i:])
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %q is not a number", s, num)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// FormatSize renders bytes the way ParseSize reads them back, using the
// largest binary unit that divides the value exactly.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1024 * GiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// HumanSize renders bytes for people, in messages and reports: a whole
// unit when it divides the value ("16 MiB", "64 KiB"), else MiB with two
// decimals from 1 MiB up ("1.50 MiB"), else "N bytes". FormatSize is the
// form that ParseSize reads back.
func HumanSize(n int64) string {
	switch {
	case n >= GiB && n%GiB == 0:
		return strconv.FormatInt(n/GiB, 10) + " GiB"
	case n >= MiB && n%MiB == 0:
		return strconv.FormatInt(n/MiB, 10) + " MiB"
	case n >= MiB:
		return strconv.FormatFloat(float64(n)/float64(MiB), 'f', 2, 64) + " MiB"
	case n >= KiB && n%KiB == 0:
		return strconv.FormatInt(n/KiB, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// ParseDuration parses a duration for the command line: Go's syntax ("30s",
// "1m30s", "250ms") or a bare number of seconds ("30", "0.5"). Negative
// durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty duration")
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		secs, ferr := strconv.ParseFloat(t, 64)
		if ferr != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return 0, fmt.Errorf("duration %q: want a number of seconds or a Go duration such as 30s or 1m30s", s)
		}
		if secs*float64(time.Second) > math.MaxInt64 {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}
