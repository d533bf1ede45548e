//go:build tools

// Package tools pins the cri-dockerd command built by this module, so that
// go mod tidy keeps every module it needs.
package tools

import (
	_ "github.com/Mirantis/cri-dockerd"
)
