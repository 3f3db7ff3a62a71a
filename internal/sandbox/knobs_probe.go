//go:build subakoprobe

package sandbox

// SkipLandlockForTests leaves Landlock out of cfg as if the kernel had
// none, so that a test of the process layer sees a Report with a layer
// missing. It exists only in builds with the subakoprobe tag.
func SkipLandlockForTests(cfg *Config) { cfg.skipLandlock = true }
