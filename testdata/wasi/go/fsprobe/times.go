package main

import "time"

var (
	timeZero  time.Time
	timeEpoch = time.Unix(1_000_000_000, 0)
)
