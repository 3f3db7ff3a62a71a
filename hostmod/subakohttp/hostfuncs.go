package subakohttp

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/subako/subako-runner/internal/abi"
)

// ModuleName is the import module name of ABI 1's HTTP functions.
const ModuleName = abi.ModuleSubakoHTTP

// Return values of the host functions for misuse of the ABI.
const (
	errRange    int32 = -1 // range outside memory, or negative length
	errNoneHeld int32 = -2 // read_response with nothing held
	errLength   int32 = -3 // read_response with the wrong length
)

// Instantiate defines the host module "subako_http" in r, with the
// functions and signatures of internal/abi's table. Define it once per
// runtime; each instance's state comes from the context it runs with
// (WithCall). A function run without a Call ends the instance by the rule
// of abi.ErrNoState.
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Closer, error) {
	fns := map[string]api.GoModuleFunc{"request": request, "read_response": readResponse}
	b := r.NewHostModuleBuilder(ModuleName)
	for f := range abi.Functions(ModuleName) {
		fn := fns[f.Name]
		if fn == nil {
			return nil, fmt.Errorf("subakohttp: %s has no implementation", f.Name)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(fn, f.Params(), f.Results()).
			WithParameterNames("ptr", "len").Export(f.Name)
	}
	return b.Instantiate(ctx)
}

func callOf(ctx context.Context, function string) *Call {
	c := callFrom(ctx)
	if c == nil {
		abi.NoState(ModuleName, function, "subakohttp.WithCall")
	}
	return c
}

func request(ctx context.Context, mod api.Module, stack []uint64) {
	c := callOf(ctx, "request")
	stack[0] = api.EncodeI32(c.hostRequest(ctx, mod.Memory(), api.DecodeU32(stack[0]), api.DecodeI32(stack[1])))
}

func readResponse(ctx context.Context, mod api.Module, stack []uint64) {
	c := callOf(ctx, "read_response")
	stack[0] = api.EncodeI32(c.hostReadResponse(mod.Memory(), api.DecodeU32(stack[0]), api.DecodeI32(stack[1])))
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
		if c.cfg.Exchange != nil && c.policy.denyMessage == "" {
			resp = c.cfg.Exchange(ctx, doc)
		} else {
			resp = c.Do(ctx, doc)
		}
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
