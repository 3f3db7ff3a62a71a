//go:build !unix

package worker

import "syscall"

func sysProcAttrOS() *syscall.SysProcAttr { return nil }
