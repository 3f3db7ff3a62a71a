package fuel

// MeteringVersion names what Instrument makes of a module: two builds with
// the same MeteringVersion turn every module into the same metered bytes.
// A stored artifact made at this version can run as stored; one made at
// another is metered again from its module.wasm.
//
// Bump it with every change to Instrument's output (cost model, code shape,
// sections kept, joined or dropped). TestMeteringVersionPinsOutput fails on a
// changed output until the bump and a new entry in its history are made.
const MeteringVersion = 9
