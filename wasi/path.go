package wasi

import (
	"context"

	"github.com/tetratelabs/wazero/api"
)

func pathCreateDirectory(context.Context, *Instance, api.Module, []uint64) Errno  { return ErrnoNosys }
func pathFilestatGet(context.Context, *Instance, api.Module, []uint64) Errno      { return ErrnoNosys }
func pathFilestatSetTimes(context.Context, *Instance, api.Module, []uint64) Errno { return ErrnoNosys }
func pathLink(context.Context, *Instance, api.Module, []uint64) Errno             { return ErrnoNosys }
func pathOpen(context.Context, *Instance, api.Module, []uint64) Errno             { return ErrnoNosys }
func pathReadlink(context.Context, *Instance, api.Module, []uint64) Errno         { return ErrnoNosys }
func pathRemoveDirectory(context.Context, *Instance, api.Module, []uint64) Errno  { return ErrnoNosys }
func pathRename(context.Context, *Instance, api.Module, []uint64) Errno           { return ErrnoNosys }
func pathSymlink(context.Context, *Instance, api.Module, []uint64) Errno          { return ErrnoNosys }
func pathUnlinkFile(context.Context, *Instance, api.Module, []uint64) Errno       { return ErrnoNosys }
