package fuel

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// refuelCounting is a context that answers the meter's lookup itself,
// counting refuels (each looks the meter up once), and is cancelled from
// the stopAt-th refuel on.
type refuelCounting struct {
	context.Context
	m       *Meter
	refuels int
	stopAt  int
}

func (c *refuelCounting) Value(k any) any {
	if k == (meterKey{}) {
		c.refuels++
		return c.m
	}
	return c.Context.Value(k)
}

func (c *refuelCounting) Err() error {
	if c.refuels >= c.stopAt {
		return context.Canceled
	}
	return nil
}

// TestTickGrantBoundsAFooledGuest pins the second line's grant: a guest
// whose fuel counter never runs out comes back to Go after at most a
// tick's grant of its regions' cost, 16 × initialSlice (2^24: its
// tick runs out at every refuel, and a tick that ran out grants the
// initial slice again, whatever the slices had grown to). The guest
// counts its iterations in memory; between its first refuel and the
// third, where the host stops it, it may run two grants.
func TestTickGrantBoundsAFooledGuest(t *testing.T) {
	ctx := context.Background()
	r := meteredRuntime(t, ctx)
	// i32.const 0; i32.const 0; i32.load; i32.const 1; i32.add; i32.store
	count := []byte{0x41, 0x00, 0x41, 0x00, 0x28, 0x02, 0x00, 0x41, 0x01, 0x6a, 0x36, 0x02, 0x00}
	wasm := fooledWith(t, fuelHalfFull, count)
	charges := regionCharges(t, wasm)
	if len(charges) != 1 {
		t.Fatalf("region charges %v; want the loop's one", charges)
	}
	region := charges[0]
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMeter(0)
	m.slice = maxSlice // as if the guest had run cheap code for long
	cctx := &refuelCounting{Context: ctx, m: m, stopAt: 3}
	mod, err := r.InstantiateModule(cctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	_, err = mod.ExportedFunction("_start").Call(cctx)
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeContextCanceled {
		t.Fatalf("%v; want the cancellation's exit at the third refuel", err)
	}
	b, ok := mod.Memory().Read(0, 4)
	if !ok {
		t.Fatal("memory")
	}
	iterations := int64(binary.LittleEndian.Uint32(b))
	// The grant is written out, not derived from tickShift: the test
	// pins the ratio (16 fuel grants, 2^24 at initialSlice).
	const grant = 16 * initialSlice
	if most := 2 * (grant/region + 1); iterations > most || iterations < grant/region {
		t.Fatalf("%d iterations of a region of %d between the first refuel and the third; want between one grant's %d and two grants' %d",
			iterations, region, grant/region, most)
	}
}
