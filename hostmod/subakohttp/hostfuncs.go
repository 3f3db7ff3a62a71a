package subakohttp

import (
	"context"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// ModuleName is the import module name of ABI 1's HTTP functions.
const ModuleName = "subako_http"

// Return values of the host functions for misuse of the ABI.
const (
	errRange    int32 = -1 // range outside memory, or negative length
	errNoneHeld int32 = -2 // read_response with nothing held
	errLength   int32 = -3 // read_response with the wrong length
)

// Instantiate defines the host module "subako_http" in r: request and
// read_response, both (i32, i32) -> i32. Define it once per runtime; each
// instance's state comes from the context it runs with (WithCall). An
// instance without a Call is answered as during discovery: every request
// fails with host_not_allowed.
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Closer, error) {
	h := &hostModule{orphans: map[api.Module]*Call{}}
	return r.NewHostModuleBuilder(ModuleName).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.request), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		WithParameterNames("ptr", "len").
		Export("request").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.readResponse), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		WithParameterNames("ptr", "len").
		Export("read_response").
		Instantiate(ctx)
}

// hostModule is the per-runtime part of the host module. orphans holds the
// state of instances run without WithCall (an embedder's wiring mistake)
// so their ABI still behaves; an entry lives only while it holds a response.
type hostModule struct {
	mu      sync.Mutex
	orphans map[api.Module]*Call
}

func (h *hostModule) call(ctx context.Context, mod api.Module, create bool) *Call {
	if c := callFrom(ctx); c != nil {
		return c
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.orphans[mod]
	if c == nil && create {
		c = NewCall(CallConfig{Policy: DiscoveryPolicy()})
		h.orphans[mod] = c
	}
	return c
}

func (h *hostModule) release(ctx context.Context, mod api.Module, c *Call) {
	if callFrom(ctx) != nil || c.holding() {
		return
	}
	h.mu.Lock()
	delete(h.orphans, mod)
	h.mu.Unlock()
}

func (h *hostModule) request(ctx context.Context, mod api.Module, stack []uint64) {
	c := h.call(ctx, mod, true)
	stack[0] = api.EncodeI32(c.hostRequest(ctx, mod.Memory(), api.DecodeU32(stack[0]), api.DecodeI32(stack[1])))
	h.release(ctx, mod, c)
}

func (h *hostModule) readResponse(ctx context.Context, mod api.Module, stack []uint64) {
	c := h.call(ctx, mod, false)
	if c == nil {
		stack[0] = api.EncodeI32(errNoneHeld)
		return
	}
	stack[0] = api.EncodeI32(c.hostReadResponse(mod.Memory(), api.DecodeU32(stack[0]), api.DecodeI32(stack[1])))
	h.release(ctx, mod, c)
}

func (c *Call) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held != nil
}

// hostRequest is request(ptr, len): copy the document out of guest memory at
// once (a later memory.grow may move it), perform it, hold the response.
func (c *Call) hostRequest(ctx context.Context, mem api.Memory, ptr uint32, n int32) int32 {
	var view []byte
	ok := mem != nil && n >= 0
	if ok {
		view, ok = mem.Read(ptr, uint32(n))
	}
	c.mu.Lock()
	if !ok {
		c.held = nil
		c.mu.Unlock()
		return errRange
	}
	if c.held != nil {
		c.held = errorResponse(errorf(KindABI, "request was called while the previous response was still held; read it with read_response(ptr, len) using the length request returned before sending another request. The previous response was dropped and this request was not sent"))
		n := int32(len(c.held))
		c.mu.Unlock()
		return n
	}
	c.mu.Unlock()

	var resp []byte
	if int64(n) > c.cfg.Limits.HTTPRequest {
		// Refused before copying: the document is never read.
		e := tooLargeRequest(int64(n), c.cfg.Limits.HTTPRequest)
		if c.policy.denyMessage != "" {
			e = errorf(KindHostNotAllowed, c.policy.denyMessage)
		}
		resp = errorResponse(e)
	} else {
		doc := make([]byte, len(view))
		copy(doc, view)
		resp = c.Do(ctx, doc)
	}
	c.mu.Lock()
	c.held = resp
	c.mu.Unlock()
	return int32(len(resp))
}

// hostReadResponse is read_response(ptr, len).
func (c *Call) hostReadResponse(mem api.Memory, ptr uint32, n int32) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		return errNoneHeld
	}
	if mem == nil || n < 0 {
		return errRange
	}
	if uint64(ptr)+uint64(n) > uint64(mem.Size()) {
		return errRange
	}
	if int(n) != len(c.held) {
		return errLength
	}
	if !mem.Write(ptr, c.held) {
		return errRange
	}
	c.held = nil
	return n
}
