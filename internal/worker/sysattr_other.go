//go:build !linux

package worker

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return sysProcAttrOS() }

const rssSupported = false

func rss(int) (int64, bool) { return 0, false }
