package conformance

// WithNearLimits returns opts with the warning threshold of the named
// checks moved (a share of each check's limit): the corpus makes a time
// warning certain by moving the threshold far below what its guest is
// made to take, not by racing the clock.
func WithNearLimits(opts Options, m map[string]float64) Options {
	opts.nearLimits = m
	return opts
}
