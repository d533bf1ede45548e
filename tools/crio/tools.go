//go:build tools

// Package tools pins the CRI-O command built by this module, so that go mod
// tidy keeps every module it needs.
package tools

import (
	_ "github.com/cri-o/cri-o/cmd/crio"
)
