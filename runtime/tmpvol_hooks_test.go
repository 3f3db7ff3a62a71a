package runtime

// Helpers only the tests use.

// flush returns once every directory released before it was called is
// removed (for tests).
func (v *tempVolumes) flush() {
	reply := make(chan struct{})
	select {
	case v.flushReq <- reply:
		<-reply
	case <-v.done:
	}
}
