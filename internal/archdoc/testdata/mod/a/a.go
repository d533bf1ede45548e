// Package a is the checker's test module's top package.
package a

import "example.com/m/b"

// T has a field and a method for the page to name.
type T struct{ F int }

// M is a method.
func (T) M() {}

// Run calls b.
func Run() { b.Do() }
