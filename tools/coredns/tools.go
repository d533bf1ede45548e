//go:build tools

// Package tools pins CoreDNS, built by this module, so that go mod tidy
// keeps every module it needs.
package tools

import _ "github.com/coredns/coredns"
