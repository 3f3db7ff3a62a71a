package fuel

import (
	"cmp"
	"slices"

	"github.com/subako/subako-runner/internal/wasmbin"
)

// maxDataGap is the longest run of zeroes joinData writes out to join two
// data segments. A segment costs wazero about 200 ns at every
// instantiation; copying 256 zeroes costs it a few tens of nanoseconds,
// and the module 256 bytes.
const maxDataGap = 256

// joinData returns the content of a data section in which each run of
// active segments that lie a few zero bytes apart is one segment, the
// zeroes between written out; ok is false when the section is to stay as
// it is (nothing to join, or a module the join could change).
//
// Go's linker writes a module's data as a segment per stretch of nonzero
// bytes: a Go greet guest has 39,000 segments about 18 bytes apart, the
// SDK's 100,000 (the most a module may have). wazero evaluates every
// segment's offset, allocating, at every instantiation: about half of a Go
// greet call, which joined into 6 segments runs in 6.5 ms instead of 11–15
// in bare wazero (docs/RATIONALE.md, "Why does metering rewrite the data
// section?").
//
// The instance's initial memory stays byte for byte what it was:
//   - only modules without a data count section: without one, no
//     instruction can name a segment (memory.init and data.drop need it),
//     so segments may be renumbered;
//   - only modules whose memory is their own (not imported): a fresh
//     memory is zero wherever no segment writes, so writing zeroes there
//     changes nothing, and a failed instantiation leaves nothing another
//     module could see half-written;
//   - only when every active segment writes memory 0 at a constant offset
//     (i32.const), so where each writes is known;
//   - a run only ascends: each segment starts at or after the end of the one
//     before (an overlap ends the run, and the later segment still wins);
//   - a gap is filled only if no other segment reaches into it (the
//     zeroes would overwrite the bytes of one applied before; one applied
//     after would win anyway, but proving the order is not worth it);
//   - a joined segment ends where its run's last segment ended, so it is
//     out of bounds exactly when one of the run is, and instantiation
//     fails as before.
//
// The zeroes written are bounded: gaps of at most maxDataGap bytes, and in
// all no more bytes than the segments themselves hold.
func joinData(m *wasmbin.Module) (content []byte, ok bool) {
	if len(m.Data) < 2 {
		return nil, false
	}
	for _, s := range m.Sections {
		if s.ID == wasmbin.SectionDataCount {
			return nil, false
		}
	}
	for _, im := range m.Imports {
		if im.Kind == wasmbin.KindMemory {
			return nil, false
		}
	}
	offsets := make([]uint64, len(m.Data))
	fillLeft := 0
	for i, d := range m.Data {
		if d.Mode == wasmbin.SegmentPassive {
			continue
		}
		off, ok := constOffset(d)
		if !ok {
			return nil, false
		}
		offsets[i] = off
		fillLeft += len(d.Init)
	}
	reached := newReach(m.Data, offsets)
	const space = 1 << 32 // a 32-bit memory's addresses
	var (
		zeroes [maxDataGap]byte
		out    = make([]byte, 0, 2*fillLeft+12*len(m.Data))
		count  uint32
		joined bool
	)
	for i := 0; i < len(m.Data); {
		d := m.Data[i]
		if d.Mode == wasmbin.SegmentPassive {
			out = append(out, 1)
			out = wasmbin.AppendU32(out, uint32(len(d.Init)))
			out = append(out, d.Init...)
			count++
			i++
			continue
		}
		start := offsets[i]
		end := start + uint64(len(d.Init))
		j := i + 1
		for ; j < len(m.Data) && m.Data[j].Mode != wasmbin.SegmentPassive; j++ {
			next, size := offsets[j], uint64(len(m.Data[j].Init))
			if next < end || next-end > maxDataGap || int(next-end) > fillLeft || next+size > space {
				break
			}
			if next > end && reached.into(end, next) {
				break // the gap holds another segment's bytes
			}
			fillLeft -= int(next - end)
			end = next + size
		}
		out = append(out, 0, byte(wasmbin.OpI32Const))
		out = wasmbin.AppendS64(out, int64(int32(uint32(start))))
		out = append(out, byte(wasmbin.OpEnd))
		out = wasmbin.AppendU32(out, uint32(end-start))
		at := start
		for k := i; k < j; k++ {
			out = append(out, zeroes[:offsets[k]-at]...)
			out = append(out, m.Data[k].Init...)
			at = offsets[k] + uint64(len(m.Data[k].Init))
		}
		joined = joined || j > i+1
		count++
		i = j
	}
	if !joined {
		return nil, false
	}
	return append(wasmbin.AppendU32(make([]byte, 0, 5+len(out)), count), out...), true
}

// reach is where the active segments write: their spans sorted by start,
// and the furthest end among each span and those before it.
type reach struct {
	starts, maxEnds []uint64
}

func newReach(data []wasmbin.Data, offsets []uint64) reach {
	type span struct{ start, end uint64 }
	spans := make([]span, 0, len(data))
	for i, d := range data {
		if d.Mode != wasmbin.SegmentPassive {
			spans = append(spans, span{offsets[i], offsets[i] + uint64(len(d.Init))})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	r := reach{starts: make([]uint64, len(spans)), maxEnds: make([]uint64, len(spans))}
	furthest := uint64(0)
	for i, s := range spans {
		furthest = max(furthest, s.end)
		r.starts[i], r.maxEnds[i] = s.start, furthest
	}
	return r
}

// into reports whether a segment writes a byte of [lo, hi): one that
// starts before hi and ends after lo. The two segments a gap lies between
// end at lo and start at hi, so they do not count.
func (r reach) into(lo, hi uint64) bool {
	n, _ := slices.BinarySearch(r.starts, hi) // the spans starting before hi
	return n > 0 && r.maxEnds[n-1] > lo
}

// constOffset is where an active segment of memory 0 starts, when its
// offset is a constant.
func constOffset(d wasmbin.Data) (uint64, bool) {
	b := d.Offset.Bytes
	if d.Memory != 0 || len(b) < 3 || b[0] != byte(wasmbin.OpI32Const) {
		return 0, false
	}
	v, n, err := wasmbin.ReadS32(b[1:])
	if err != nil || 1+n != len(b)-1 || b[len(b)-1] != byte(wasmbin.OpEnd) {
		return 0, false
	}
	return uint64(uint32(v)), true
}
